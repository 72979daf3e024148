package store_test

import (
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/remotetest"
)

func TestSQLiteMCPServersConformance(t *testing.T) {
	remotetest.Run(t, OpenSQLite(t))
}

// TestSQLiteMCPServersCacheConformance: the cache serve puts in front of
// the store keeps the contract; with an hour's TTL each read after a
// write is the cache's invalidation at work.
func TestSQLiteMCPServersCacheConformance(t *testing.T) {
	remotetest.Run(t, mcpremote.NewCache(OpenSQLite(t), time.Hour, nil))
}

// TestSQLiteKeepsAWriteMadeWhileMCPSecretsAreUpdated: the SQLite lock of
// a server's secrets is not the database's write lock, so a write of the
// server can land while an update runs; it is kept.
func TestSQLiteKeepsAWriteMadeWhileMCPSecretsAreUpdated(t *testing.T) {
	remotetest.WriteMeanwhile(t, OpenSQLite(t))
}

func TestPostgresMCPServersConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	remotetest.Run(t, OpenPostgres(t))
}

func TestPostgresMCPServersCacheConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	remotetest.Run(t, mcpremote.NewCache(OpenPostgres(t), time.Hour, nil))
}
