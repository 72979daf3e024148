package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scopes a key may hold.
const (
	ScopeMCP    = "mcp"    // the MCP endpoint
	ScopeHosted = "hosted" // the /v1 hosted-tool endpoints
	ScopeAdmin  = "admin"  // key management and usage of every account
	ScopeTools  = "tools"  // writing the account's tool definitions, sessions and tool permissions
)

// AllScopes lists the valid scopes.
var AllScopes = []string{ScopeMCP, ScopeHosted, ScopeAdmin, ScopeTools}

// SecretPrefix starts every key secret, so a leaked one is recognisable.
const SecretPrefix = "th_"

// Errors callers decide on.
var (
	ErrNotFound     = errors.New("not found")
	ErrInvalidKey   = errors.New("invalid API key")
	ErrRevoked      = errors.New("API key revoked")
	ErrInvalidInput = errors.New("invalid input")
)

// Limits are the per-key limits. Zero means unlimited.
type Limits struct {
	CallsPerMinute  int     `json:"calls_per_minute"`
	ConcurrentCalls int     `json:"concurrent_calls"`
	MonthlyUnitsCap float64 `json:"monthly_units_cap"`
	// Hosted bounds each hosted /v1 loop run with the key.
	Hosted HostedBudgets `json:"hosted"`
}

// HostedBudgets are a key's bounds of one hosted /v1 loop. Zero leaves the
// server's (hosted.budgets); a key's bound applies where it is lower than
// the server's or the server sets none, so a key can only tighten them.
type HostedBudgets struct {
	ModelCalls  int   `json:"model_calls"`
	ToolCalls   int   `json:"tool_calls"`
	ResultBytes int64 `json:"result_bytes"`
	WallClockMS int64 `json:"wall_clock_ms"`
	Cost        int64 `json:"cost"`
}

// MaxHostedBudget is the largest value of any HostedBudgets field: the
// largest integer a JSON number carries exactly.
const MaxHostedBudget = 1 << 53

// Validate rejects negative limits and budgets, and budgets over
// MaxHostedBudget.
func (l Limits) Validate() error {
	if l.CallsPerMinute < 0 || l.ConcurrentCalls < 0 || l.MonthlyUnitsCap < 0 {
		return fmt.Errorf("%w: limits must be zero (unlimited) or positive", ErrInvalidInput)
	}
	h := l.Hosted
	for _, f := range []struct {
		name string
		v    int64
	}{{"model_calls", int64(h.ModelCalls)}, {"tool_calls", int64(h.ToolCalls)}, {"result_bytes", h.ResultBytes},
		{"wall_clock_ms", h.WallClockMS}, {"cost", h.Cost}} {
		if f.v < 0 || f.v > MaxHostedBudget {
			return fmt.Errorf("%w: hosted.%s %d: want 0 (the server's bound) to %d", ErrInvalidInput, f.name, f.v, int64(MaxHostedBudget))
		}
	}
	return nil
}

// Account owns keys, journal records and usage.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Key is an API key without its secret.
type Key struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"` // the first characters of the secret, for recognition
	Hash       string     `json:"-"`
	Scopes     []string   `json:"scopes"`
	Limits     Limits     `json:"limits"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Has reports whether the key holds scope.
func (k *Key) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// NewSecret returns a fresh key secret: "th_" and 32 URL-safe characters.
func NewSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("key secret: %w", err)
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSecret returns the stored form of a secret.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// NewID returns a random identifier with a readable prefix ("key_…").
func NewID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// NormalizeScopes validates, de-duplicates and sorts scopes.
func NormalizeScopes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: a key needs at least one scope of %s", ErrInvalidInput, strings.Join(AllScopes, ", "))
	}
	out := []string{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if !slices.Contains(AllScopes, s) {
			return nil, fmt.Errorf("%w: unknown scope %q; valid scopes are %s", ErrInvalidInput, s, strings.Join(AllScopes, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Month is the metering period of t: "2026-12" in UTC.
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// UsageRow is the usage of one key and tool in one month.
type UsageRow struct {
	AccountID string  `json:"account_id"`
	KeyID     string  `json:"key_id"`
	Month     string  `json:"month"`
	Tool      string  `json:"tool"`
	Calls     int64   `json:"calls"`
	Units     float64 `json:"units"`
	Cost      float64 `json:"cost"`
}

// Store is the durable state this package needs.
type Store interface {
	CreateAccount(ctx context.Context, a Account) error
	Account(ctx context.Context, id string) (*Account, error)
	CreateKey(ctx context.Context, k Key) error
	// KeyByHash and KeyByID return ErrNotFound when there is no such key.
	KeyByHash(ctx context.Context, hash string) (*Key, error)
	KeyByID(ctx context.Context, id string) (*Key, error)
	// ListKeys lists the keys of an account, or of every account when
	// accountID is "".
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	CountKeys(ctx context.Context) (int, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
	SetLimits(ctx context.Context, id string, l Limits) error
	TouchKey(ctx context.Context, id string, at time.Time) error

	// ReserveCost atomically adds cost to the key's month total if the total
	// stays within limit (limit 0: no cap). It reports whether it did and the
	// total before the attempt.
	ReserveCost(ctx context.Context, keyID, month string, cost, limit float64) (ok bool, used float64, err error)
	// SettleUsage adjusts the month total by actualCost-reservedCost and adds
	// the call to the per-tool usage of the key.
	SettleUsage(ctx context.Context, row UsageRow, reservedCost float64) error
	// Usage lists per-key, per-tool usage of an account ("" = every account)
	// in a month.
	Usage(ctx context.Context, accountID, month string) ([]UsageRow, error)
	// MonthCost is the key's month total (reservations included).
	MonthCost(ctx context.Context, keyID, month string) (float64, error)
}
