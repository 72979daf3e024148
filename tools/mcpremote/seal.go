package mcpremote

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoKey: a server has secrets and toolhost has no TOOLHOST_SECRET_KEY.
var ErrNoKey = errors.New("TOOLHOST_SECRET_KEY is not set: secrets of MCP servers cannot be stored")

// ErrUnknownKey: sealed under a key that is neither the current one nor a
// previous one (TOOLHOST_SECRET_KEY_PREVIOUS).
var ErrUnknownKey = errors.New("the secrets of this MCP server were sealed under a key this server does not have")

// Sealer seals Secrets with AES-256-GCM under the server key. A sealed
// value is a version byte, the 8-byte id of the key (the start of its
// SHA-256), a 12-byte nonce and the ciphertext; the account and server id
// are the additional data, so a sealed value copied to another server's
// row does not open.
//
// Rotation: start toolhost with the new key in TOOLHOST_SECRET_KEY and the
// old one in TOOLHOST_SECRET_KEY_PREVIOUS. Values sealed under the old key
// still open; each is sealed again under the new key the next time it is
// written (PATCH) or used (Stale reports it). Once no row needs the old key
// it can be dropped from TOOLHOST_SECRET_KEY_PREVIOUS.
type Sealer struct {
	current keyEntry
	keys    map[string]cipher.AEAD
}

type keyEntry struct {
	id   string
	aead cipher.AEAD
}

const sealVersion = 1

// ParseKey reads a 32-byte key written as 64 hex digits or as base64.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("the secret key must be 32 bytes written as 64 hex digits or base64 (openssl rand -base64 32)")
}

// NewSealer builds a sealer from the current key and any previous ones.
// A nil current key gives a sealer that refuses to seal non-empty
// secrets (ErrNoKey).
func NewSealer(current []byte, previous ...[]byte) (*Sealer, error) {
	s := &Sealer{keys: map[string]cipher.AEAD{}}
	add := func(k []byte) (keyEntry, error) {
		if len(k) != 32 {
			return keyEntry{}, fmt.Errorf("a secret key is %d bytes; AES-256 needs 32", len(k))
		}
		blk, err := aes.NewCipher(k)
		if err != nil {
			return keyEntry{}, fmt.Errorf("secret key: %w", err)
		}
		aead, err := cipher.NewGCM(blk)
		if err != nil {
			return keyEntry{}, fmt.Errorf("secret key: %w", err)
		}
		sum := sha256.Sum256(k)
		e := keyEntry{id: string(sum[:8]), aead: aead}
		s.keys[e.id] = aead
		return e, nil
	}
	if current != nil {
		e, err := add(current)
		if err != nil {
			return nil, err
		}
		s.current = e
	}
	for _, k := range previous {
		if _, err := add(k); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func aad(account, id string) []byte { return []byte("toolhost/mcp-server\x00" + account + "\x00" + id) }

// Seal seals sec for the server (account, id). Empty secrets seal to nil.
func (s *Sealer) Seal(account, id string, sec Secrets) ([]byte, error) {
	if sec.empty() {
		return nil, nil
	}
	out, err := s.sealJSON(aad(account, id), sec)
	if err != nil {
		return nil, fmt.Errorf("seal secrets: %w", err)
	}
	return out, nil
}

// sealJSON seals v's JSON under the current key with the additional data
// ad, which names what the value belongs to.
func (s *Sealer) sealJSON(ad []byte, v any) ([]byte, error) {
	if s == nil || s.current.aead == nil {
		return nil, ErrNoKey
	}
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, s.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte{sealVersion}, s.current.id...)
	out = append(out, nonce...)
	return s.current.aead.Seal(out, nonce, plain, ad), nil
}

// Open opens what Seal made for the same (account, id).
func (s *Sealer) Open(account, id string, sealed []byte) (Secrets, error) {
	var sec Secrets
	if len(sealed) == 0 {
		return sec, nil
	}
	if err := s.openJSON(aad(account, id), sealed, &sec); err != nil {
		return Secrets{}, err
	}
	return sec, nil
}

// openJSON opens what sealJSON made with the same additional data into v.
func (s *Sealer) openJSON(ad, sealed []byte, v any) error {
	if len(sealed) < 1+8+12 || sealed[0] != sealVersion {
		return errors.New("the sealed secrets of this MCP server are not in a known format")
	}
	if s == nil {
		return ErrNoKey
	}
	aead, ok := s.keys[string(sealed[1:9])]
	if !ok {
		return ErrUnknownKey
	}
	plain, err := aead.Open(nil, sealed[9:21], sealed[21:], ad)
	if err != nil {
		return fmt.Errorf("open the secrets of this MCP server: %w", err)
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("open the secrets of this MCP server: %w", err)
	}
	return nil
}

// Stale reports whether sealed was made under a key other than the
// current one (it should be sealed again).
func (s *Sealer) Stale(sealed []byte) bool {
	return len(sealed) > 9 && s != nil && s.current.aead != nil && string(sealed[1:9]) != s.current.id
}

func (sec Secrets) empty() bool {
	return len(sec.Headers) == 0 && sec.BearerToken == "" && sec.ClientSecret == "" && sec.Grant == nil
}
