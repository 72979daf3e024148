package mcpremote_test

import (
	"testing"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/remotetest"
)

func TestMemStoreConformance(t *testing.T) { remotetest.Run(t, mcpremote.NewMemStore()) }

func TestMemStoreKeepsAWriteMadeWhileSecretsAreUpdated(t *testing.T) {
	remotetest.WriteMeanwhile(t, mcpremote.NewMemStore())
}
