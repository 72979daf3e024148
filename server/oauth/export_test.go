package oauth

// WaitForPurge waits for the purge (clients, tokens, requests) under
// way, if any, so tests read the store after it.
func WaitForPurge(p *Provider) { p.purge.wait() }
