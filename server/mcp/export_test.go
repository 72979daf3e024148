package mcp

// OnSyncWait makes s call f whenever a sync of an account waits for the
// one running: the event a test of their order waits for. Set it before s
// serves anything.
func OnSyncWait(s *Server, f func(account string)) { s.syncWaits = f }
