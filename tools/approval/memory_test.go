package approval_test

import (
	"testing"

	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/approval/approvaltest"
)

func TestMemoryStore(t *testing.T) {
	approvaltest.Run(t, func(*testing.T) approval.Store { return approval.NewMemory() })
}
