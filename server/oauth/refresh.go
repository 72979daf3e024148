package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/toolhost/toolhost/internal/identity"
)

// A refresh token names its grant: "<random>.<grant id>.<MAC>", the MAC
// (HMAC-SHA256 under a key derived from the signing key, so replicas
// share it) over the first two parts. Rotation leaves the token rotated
// away in the store only until the next purge: a reuse of it, which means
// it leaked (OAuth 2.1 §4.3.1), is recognised without its row — a token
// only this server can have made, naming a grant, and unknown to the
// store, can only be one that grant already moved past (a grant has one
// refresh chain, and a valid token is never purged), or the chain's last
// one, expired, when the grant has no refresh token left to lose — and
// revokes the grant as the stored row would. So reuse detection lasts as long as the
// grant, however many refreshes the purge has deleted.

// refreshMACLen is how many bytes of the HMAC a refresh token carries.
const refreshMACLen = 16

// newRefreshToken returns a fresh refresh token naming grantID.
func (s *storage) newRefreshToken(grantID string) (string, error) {
	r, err := randomToken()
	if err != nil {
		return "", err
	}
	body := r + "." + grantID
	return body + "." + s.refreshMAC(body), nil
}

func (s *storage) refreshMAC(body string) string {
	m := hmac.New(sha256.New, s.refreshKey)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:refreshMACLen])
}

// grantNamedBy returns the grant a refresh token made here names, or ""
// for anything else (a forged or altered token, one issued before tokens
// named their grant).
func (s *storage) grantNamedBy(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[1] == "" {
		return ""
	}
	want := s.refreshMAC(parts[0] + "." + parts[1])
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return ""
	}
	return parts[1]
}

// unstoredGrant returns the grant a refresh token with no row names, nil
// when it names none (not ours) or the grant is gone (its client was
// purged). Such a token was rotated away and purged: it leaked.
func (s *storage) unstoredGrant(ctx context.Context, token string) (*identity.Grant, error) {
	id := s.grantNamedBy(token)
	if id == "" {
		return nil, nil
	}
	g, err := s.st.Grant(ctx, id)
	if errors.Is(err, identity.ErrNotFound) {
		return nil, nil
	}
	return g, err
}

// revokeReused revokes the grant of a refresh token used again after it
// was rotated away.
func (s *storage) revokeReused(ctx context.Context, g *identity.Grant) {
	if g.RevokedAt != nil {
		return
	}
	s.logger.Warn("a refresh token rotated away was used again: revoking its grant", "grant_id", g.ID, "client_id", g.ClientID)
	if err := s.st.RevokeGrant(ctx, g.ID, s.now()); err != nil {
		s.logger.Warn("revoke grant of a reused refresh token", "grant_id", g.ID, "err", err)
	}
}
