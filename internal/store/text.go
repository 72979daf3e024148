package store

import (
	"strings"
	"unicode/utf8"
)

// storable makes every string of a journal write one a PostgreSQL TEXT
// column holds: PostgreSQL refuses a NUL character and invalid UTF-8 in
// text, and a refused statement fails the whole pipelined batch it is in
// (journalwrite.go), so one remote tool answering "\u0000" would lose the
// records of every call committed with it. Each NUL and each invalid byte
// becomes U+FFFD, on SQLite too, so a record reads the same on either
// store. Strings that need nothing (nearly all) are left as they are;
// []byte (args_raw, BYTEA) is kept exactly.
func storable(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok && (strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)) {
			args[i] = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
		}
	}
	return args
}
