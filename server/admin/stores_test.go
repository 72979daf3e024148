package admin_test

import (
	"testing"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
)

// sqlStores are the SQL stores the admin API runs on.
func sqlStores(t *testing.T) map[string]*store.DB { return storetest.Open(t, "admin_test") }
