package admin_test

import (
	"testing"

	"toolhost/store"
	"toolhost/store/storetest"
)

// sqlStores are the SQL stores the admin API runs on.
func sqlStores(t *testing.T) map[string]*store.DB { return storetest.Open(t, "admin_test") }
