package journal_test

import (
	"testing"

	"toolhost/journal"
	"toolhost/journal/journaltest"
)

func TestMemStoreConformance(t *testing.T) {
	journaltest.Run(t, func(*testing.T) journal.Store { return journal.NewMemStore() })
}
