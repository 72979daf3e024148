package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// sessionCookie holds the sealed session; preCookie the nonce the
// sign-in form's CSRF token is bound to.
const (
	sessionCookie = "toolhost_console"
	preCookie     = "toolhost_console_pre"
)

// DefaultLifetime is how long a session lasts from sign-in.
const DefaultLifetime = time.Hour

// session is what the cookie seals: the API key it was opened with, its
// id (what sign-out forgets, what the CSRF token is bound to) and its end.
type session struct {
	Secret  string `json:"k"`
	ID      string `json:"sid"`
	Expires int64  `json:"exp"` // Unix seconds
	// Kind is kindOAuth for a session opened through the OAuth server:
	// Secret is then its access token, Client the console's client and
	// Refresh the grant's refresh token (kept only to revoke the grant).
	Kind    string `json:"kind,omitempty"`
	Client  string `json:"cid,omitempty"`
	Refresh string `json:"rt,omitempty"`
}

const kindOAuth = "oauth"

var errBadSession = errors.New("no valid console session")

// sealer seals and opens sessions and derives CSRF tokens. Its keys
// derive from one secret, so replicas given the same secret share them.
type sealer struct {
	aead    cipher.AEAD
	csrfKey []byte

	mu      sync.Mutex
	revoked map[string]time.Time // session id → its expiry
}

func newSealer(secret []byte) (*sealer, error) {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("console session key: %w", err)
		}
	}
	enc := sha256.Sum256(append([]byte("toolhost-console-seal:"), secret...))
	mac := sha256.Sum256(append([]byte("toolhost-console-csrf:"), secret...))
	block, err := aes.NewCipher(enc[:])
	if err != nil {
		return nil, fmt.Errorf("console session cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("console session cipher: %w", err)
	}
	return &sealer{aead: aead, csrfKey: mac[:], revoked: map[string]time.Time{}}, nil
}

func (s *sealer) seal(ss session) (string, error) { return s.sealAs(sessionCookie, ss) }

// sealAs seals v for the cookie named name (the name is the additional
// data, so one cookie's value never opens as another's).
func (s *sealer) sealAs(name string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(name))), nil
}

// openAs opens what sealAs sealed for the cookie named name.
func (s *sealer) openAs(name, v string, out any) error {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) < s.aead.NonceSize() {
		return errBadSession
	}
	plain, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], []byte(name))
	if err != nil || json.Unmarshal(plain, out) != nil {
		return errBadSession
	}
	return nil
}

// open returns the session a cookie value seals, unless it is forged,
// expired at now or signed out.
func (s *sealer) open(v string, now time.Time) (session, error) {
	var ss session
	if err := s.openAs(sessionCookie, v, &ss); err != nil || ss.ID == "" || ss.Secret == "" {
		return ss, errBadSession
	}
	if !now.Before(time.Unix(ss.Expires, 0)) {
		return ss, errBadSession
	}
	s.mu.Lock()
	_, gone := s.revoked[ss.ID]
	s.mu.Unlock()
	if gone {
		return ss, errBadSession
	}
	return ss, nil
}

// revoke forgets a session id until it would have expired anyway; older
// entries are dropped on the way.
func (s *sealer) revoke(ss session, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, exp := range s.revoked {
		if now.After(exp) {
			delete(s.revoked, id)
		}
	}
	s.revoked[ss.ID] = time.Unix(ss.Expires, 0)
}

// csrf is the form token bound to a session id or a sign-in nonce.
func (s *sealer) csrf(binding string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("csrf\x00" + binding))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *sealer) checkCSRF(binding, token string) bool {
	return binding != "" && token != "" && hmac.Equal([]byte(token), []byte(s.csrf(binding)))
}

// randomID is 24 random bytes, URL-safe.
func randomID() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
