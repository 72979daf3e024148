package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// Character is the character a session plays, read by the builtin
// get_character_info. Its ID is what tool definitions with source
// "character" name as source_id.
type Character struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Attributes  json.RawMessage `json:"attributes"`
}

// Limits of a character.
const (
	MaxCharacterName        = 200
	MaxCharacterDescription = 16 << 10
	MaxCharacterAttributes  = 64 << 10
)

var characterIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// CheckCharacter validates a character a caller sent; it returns the field
// at fault and why. Attributes must be a JSON object (null or absent
// becomes {}).
func CheckCharacter(c *Character) (field string, err error) {
	switch {
	case !characterIDPattern.MatchString(c.ID):
		return "character.id", fmt.Errorf("want 1 to 128 characters of A-Z a-z 0-9 . _ : -")
	case c.Name == "" || utf8.RuneCountInString(c.Name) > MaxCharacterName || !utf8.ValidString(c.Name):
		return "character.name", fmt.Errorf("want 1 to %d characters of valid UTF-8", MaxCharacterName)
	case len(c.Description) > MaxCharacterDescription || !utf8.ValidString(c.Description):
		return "character.description", fmt.Errorf("want at most %d bytes of valid UTF-8", MaxCharacterDescription)
	}
	a := bytes.TrimSpace(c.Attributes)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		c.Attributes = json.RawMessage("{}")
		return "", nil
	}
	if len(a) > MaxCharacterAttributes {
		return "character.attributes", fmt.Errorf("%d bytes; at most %d are allowed", len(a), MaxCharacterAttributes)
	}
	if a[0] != '{' {
		return "character.attributes", fmt.Errorf("want a JSON object")
	}
	c.Attributes = a
	return "", nil
}

// Variables: the per-session key → JSON value store of get_variable and
// set_variable.

// Limits of session variables.
const (
	MaxVariableName        = 64
	MaxVariableBytes       = 64 << 10
	MaxVariablesPerSession = 1000
)

// Errors of the variable store.
var (
	ErrNoVariable       = errors.New("no such variable")
	ErrTooManyVariables = errors.New("the session has the most variables allowed")
)

// Variable is one stored variable.
type Variable struct {
	Name      string
	Value     json.RawMessage
	UpdatedAt time.Time
}

// VariableStore keeps session variables, scoped by account and session.
// Deleting a session deletes its variables.
type VariableStore interface {
	// GetVariable returns a variable or ErrNoVariable.
	GetVariable(ctx context.Context, accountID, sessionID, name string) (Variable, error)
	// SetVariable stores a value, replacing the old one; a new name past
	// MaxVariablesPerSession is ErrTooManyVariables.
	SetVariable(ctx context.Context, accountID, sessionID string, v Variable) error
	// ListVariables returns up to limit variables of a session whose
	// names sort after after, in name order: a page of a scan (the
	// builtin query_memory reads a session's variables this way).
	ListVariables(ctx context.Context, accountID, sessionID, after string, limit int) ([]Variable, error)
}

var variableNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// CheckVariableName validates a variable name: 1–64 characters of
// letters, digits, '_', '.', ':' and '-'.
func CheckVariableName(name string) error {
	if !variableNamePattern.MatchString(name) {
		return fmt.Errorf("variable name %q: want 1 to %d characters of A-Z a-z 0-9 _ . : -", clipID(name), MaxVariableName)
	}
	return nil
}
