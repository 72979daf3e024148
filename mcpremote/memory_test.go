package mcpremote_test

import (
	"testing"

	"toolhost/mcpremote"
	"toolhost/mcpremote/remotetest"
)

func TestMemStoreConformance(t *testing.T) { remotetest.Run(t, mcpremote.NewMemStore()) }
