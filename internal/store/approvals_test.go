package store_test

import (
	"os"
	"testing"

	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/approval/approvaltest"
)

func TestSQLiteApprovalConformance(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approval.Store { return OpenSQLite(t) })
}

func TestPostgresApprovalConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	approvaltest.Run(t, func(t *testing.T) approval.Store { return OpenPostgres(t) })
}
