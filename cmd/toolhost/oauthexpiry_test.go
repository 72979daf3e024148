package main

import (
	"testing"

	"toolhost/config"
	"toolhost/server/oauth"
)

// The config file's shortest client lifetime is the authorization
// server's (config does not import it): a file toolhost check accepts is
// never raised in silence by the provider.
func TestOAuthClientTTLBoundsAgreeWithTheProvider(t *testing.T) {
	if config.MinClientTTL != oauth.MinClientTTL {
		t.Fatalf("config.MinClientTTL %v, oauth.MinClientTTL %v", config.MinClientTTL, oauth.MinClientTTL)
	}
	if oauth.DefaultUnauthorizedClientTTL > config.MaxUnauthorizedClientTTL || oauth.DefaultIdleClientTTL > config.MaxIdleClientTTL {
		t.Fatal("a default client lifetime is above what the config file may set")
	}
}
