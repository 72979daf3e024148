package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Errors a Store returns; callers check them with errors.Is.
var (
	ErrNotFound = errors.New("session not found")
	ErrConflict = errors.New("session already exists")
)

// Session is one session of an account.
type Session struct {
	ID        string
	AccountID string
	// Metadata is a JSON object, "{}" when none was given.
	Metadata json.RawMessage
	// Permissions are the base tool permissions; the zero value of a
	// session that never set any is Default().
	Permissions Permissions
	// Character is the character the session plays; nil when none.
	Character *Character
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Store keeps sessions. Every method is scoped to an account.
type Store interface {
	// CreateSession stores s; ErrConflict when the account already has a
	// session with that id.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns a session or ErrNotFound.
	GetSession(ctx context.Context, accountID, id string) (Session, error)
	// DeleteSession removes a session or returns ErrNotFound.
	DeleteSession(ctx context.Context, accountID, id string) error
	// TouchSession creates the session with default metadata and
	// permissions unless it exists, and returns it either way.
	TouchSession(ctx context.Context, accountID, id string, now time.Time) (Session, error)
	// SetSessionPermissions replaces a session's permissions (ErrNotFound
	// when it does not exist).
	SetSessionPermissions(ctx context.Context, accountID, id string, p Permissions, now time.Time) error
	// SetSessionCharacter replaces a session's character; nil removes it
	// (ErrNotFound when the session does not exist).
	SetSessionCharacter(ctx context.Context, accountID, id string, c *Character, now time.Time) error
}

// MaxIDLength bounds a session id (MCP session ids and X-Session-Id values
// are shorter).
const MaxIDLength = 128

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidID checks an id a caller chose for POST /sessions: 1–128 characters
// of letters, digits, '.', '_', ':' and '-'.
func ValidID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("session id %q: want 1 to %d characters of A-Z a-z 0-9 . _ : -", clipID(id), MaxIDLength)
	}
	return nil
}

func clipID(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// DefaultSlots are the caller slots of the seed; the config may replace
// them.
var DefaultSlots = []string{"narrator", "director", "verifier", "memory"}
