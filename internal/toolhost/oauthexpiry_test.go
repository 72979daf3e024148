package toolhost

import (
	"testing"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/server/oauth"
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

// The config file's token lifetime defaults, which Validate fills in to
// compare a refresh lifetime with the access one, are the provider's.
func TestOAuthTokenTTLDefaultsAgreeWithTheProvider(t *testing.T) {
	if config.DefaultAccessTokenTTL != oauth.DefaultAccessTokenTTL || config.DefaultRefreshTokenTTL != oauth.DefaultRefreshTokenTTL {
		t.Fatalf("config defaults %v/%v, provider defaults %v/%v", config.DefaultAccessTokenTTL, config.DefaultRefreshTokenTTL,
			oauth.DefaultAccessTokenTTL, oauth.DefaultRefreshTokenTTL)
	}
}
