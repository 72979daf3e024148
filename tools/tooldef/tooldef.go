package tooldef

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors a Store returns; callers check them with errors.Is.
var (
	ErrNotFound = errors.New("tool definition not found")
	// ErrConflict: the account already has a definition with the same
	// (name, source, source_id).
	ErrConflict = errors.New("tool definition conflict")
	// ErrLimit: the account already has as many definitions as the cap
	// of the create allows.
	ErrLimit = errors.New("tool definition limit reached")
)

// DefaultMaxPerAccount is how many definitions an account may keep
// (tools.max_definitions_per_account): every one is in each of the
// account's tool listings, so the cap bounds those as well as storage.
const DefaultMaxPerAccount = 256

// Sources of a definition.
const (
	SourceCustom    = "custom"
	SourceCharacter = "character"
	SourcePreset    = "preset"
)

// HandlerScript is the only handler type the API publishes.
const HandlerScript = "script"

// Definition is one tool definition.
type Definition struct {
	ID              string
	AccountID       string
	Name            string
	Description     string
	Parameters      json.RawMessage // a JSON Schema object
	SideEffectLevel string
	AllowedSlots    []string
	Source          string
	SourceID        string // "" is null
	Enabled         bool
	HandlerType     string          // "" is null
	Handler         json.RawMessage // nil is null
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Script returns the body of a script handler, "" when there is none.
func (d Definition) Script() string {
	var h struct {
		Script string `json:"script"`
	}
	if d.HandlerType != HandlerScript || json.Unmarshal(d.Handler, &h) != nil {
		return ""
	}
	return h.Script
}

// Sort fields of Query.
const (
	SortUpdatedAt = "updated_at"
	SortName      = "name"
)

// Query filters, sorts and pages an account's definitions.
type Query struct {
	AccountID   string
	Name        string
	Source      string
	SourceID    string
	HasSourceID bool
	Enabled     *bool
	SortBy      string // default updated_at
	Asc         bool
	Limit       int // 0: all
	Offset      int
}

// Store keeps definitions. Every method is scoped to an account.
type Store interface {
	// CreateDefinition stores d. With limit > 0 it refuses (ErrLimit) when
	// the account already has limit definitions, counted together with the
	// insert: concurrent creates never take the account past limit.
	CreateDefinition(ctx context.Context, d Definition, limit int) error
	GetDefinition(ctx context.Context, accountID, id string) (Definition, error)
	ListDefinitions(ctx context.Context, q Query) ([]Definition, int, error)
	// UpdateDefinition replaces a stored definition (matched by account
	// and id) with d.
	UpdateDefinition(ctx context.Context, d Definition) error
	DeleteDefinition(ctx context.Context, accountID, id string) error
}
