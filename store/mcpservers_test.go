package store_test

import (
	"os"
	"testing"

	"toolhost/mcpremote/remotetest"
)

func TestSQLiteMCPServersConformance(t *testing.T) {
	remotetest.Run(t, OpenSQLite(t))
}

func TestPostgresMCPServersConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	remotetest.Run(t, OpenPostgres(t))
}
