package oauth

// WaitForClientPurge waits for the purge of expired clients under way, if
// any, so tests read the store after it.
func WaitForClientPurge(p *Provider) { p.purge.wait() }
