package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/oauth"
)

// jwtTimes are the registered time claims of a JWT, in Unix seconds.
type jwtTimes struct {
	Iat int64 `json:"iat"`
	Nbf int64 `json:"nbf"`
	Exp int64 `json:"exp"`
}

func tokenTimes(t *testing.T, jwt string) jwtTimes {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c jwtTimes
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// The authorization server issues and verifies on one clock, its Now:
// an access token's iat, nbf and exp, the token response's expires_in
// and the expiry VerifyToken checks all read it, never the wall clock,
// whichever side of the wall clock it runs on.
func TestTokensAreIssuedAndVerifiedOnTheProviderClock(t *testing.T) {
	const ttl = 24 * time.Hour // purgeServer's access token lifetime
	for name, db := range grantStores(t) {
		for _, start := range []time.Time{
			time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC),
			time.Date(2090, 7, 8, 9, 10, 11, 0, time.UTC),
		} {
			t.Run(name+"/"+start.Format("2006"), func(t *testing.T) {
				ctx := context.Background()
				clk := newClock(start)
				s := purgeServer(t, db, clk)
				tok := s.exchange(t)
				if tok.ExpiresIn < int64(ttl/time.Second)-1 || tok.ExpiresIn > int64(ttl/time.Second) {
					t.Errorf("expires_in = %d s, want %d", tok.ExpiresIn, int64(ttl/time.Second))
				}
				want := jwtTimes{Iat: start.Unix(), Nbf: start.Unix(), Exp: start.Add(ttl).Unix()}
				if got := tokenTimes(t, tok.AccessToken); got != want {
					t.Errorf("token times = %+v, want %+v (the provider's clock)", got, want)
				}
				clk.add(ttl - time.Second)
				if _, err := s.p.VerifyToken(ctx, tok.AccessToken); err != nil {
					t.Fatalf("a second before it expires: %v", err)
				}
				clk.add(time.Second)
				if _, err := s.p.VerifyToken(ctx, tok.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
					t.Fatalf("when it expires: %v, want invalid", err)
				}
			})
		}
	}
}
