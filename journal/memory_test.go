package journal_test

import (
	"testing"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/journal/journaltest"
)

func TestMemStoreConformance(t *testing.T) {
	journaltest.Run(t, func(*testing.T) journal.Store { return journal.NewMemStore() })
}
