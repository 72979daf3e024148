package mcpremote

import (
	"fmt"
	"regexp"
	"strings"
)

// Separator joins a server's name and a tool's name.
const Separator = "__"

// MaxToolNameLen is the longest toolhost tool name.
const MaxToolNameLen = 64

var (
	remoteNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	exposedRe    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// ExposedName is the toolhost name of the remote tool on server, or a
// reason it has none.
func ExposedName(server, tool string) (string, error) {
	if !remoteNameRe.MatchString(tool) {
		return "", fmt.Errorf("the remote tool name %q has characters other than ASCII letters, digits, '_', '-' and '.'", tool)
	}
	n := server + Separator + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(tool))
	if len(n) > MaxToolNameLen {
		return "", fmt.Errorf("%s would be %d characters; tool names are at most %d", n[:32]+"…", len(n), MaxToolNameLen)
	}
	if !exposedRe.MatchString(n) {
		return "", fmt.Errorf("%s is not a valid tool name", n)
	}
	return n, nil
}

// splitName returns the server part of an exposed name.
func splitName(name string) (server string, ok bool) {
	s, _, ok := strings.Cut(name, Separator)
	return s, ok && s != ""
}
