// Package clip shortens text that is echoed back to a caller: a value from
// a request that an error message quotes, a message itself. Errors must say
// what was wrong without sending a huge input back (an 8 MB role name must
// not become a 24 MB answer).
package clip

import (
	"fmt"
	"unicode/utf8"
)

// EchoRunes is how much of an input value an error quotes.
const EchoRunes = 200

// MessageRunes bounds a whole error message.
const MessageRunes = 2000

// Runes returns s cut to at most n runes, with "…" and the full length
// appended when it was cut. Invalid UTF-8 is counted byte by byte.
func Runes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes in all)", s[:i], len(s))
}

// Echo cuts an input value that an error quotes to EchoRunes.
func Echo(s string) string { return Runes(s, EchoRunes) }

// Message cuts a whole error message to MessageRunes.
func Message(s string) string { return Runes(s, MessageRunes) }
