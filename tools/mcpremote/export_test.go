package mcpremote

// OnTokenExpired has g tell f of every caller that found its access
// token expired, before it joins the grant's refresh: a test then knows
// every caller is waiting for the refresh it holds. Set before g is used.
func OnTokenExpired(g *Gateway, f func()) { g.onExpired = f }
