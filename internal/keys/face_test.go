package keys_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
)

// TestConsoleFaceIsAdmittedLikeMCP: the console's playground calls as its
// signed-in key, so its calls need the mcp scope and count against the
// key's calls per minute, as calls over /mcp do.
func TestConsoleFaceIsAdmittedLikeMCP(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := keys.New(keys.Options{Store: db})
	t.Cleanup(svc.Close)
	for _, tc := range []struct {
		name   string
		scopes []string
		face   string
		calls  int    // calls made; the last one is judged
		code   string // its refusal, "" when admitted
	}{
		{"console with the mcp scope", []string{keys.ScopeMCP}, "console", 1, ""},
		{"console without the mcp scope", []string{keys.ScopeTools, keys.ScopeHosted}, "console", 1, keys.CodeScopeMissing},
		{"console past calls per minute", []string{keys.ScopeMCP}, "console", 2, keys.CodeRateLimited},
		{"mcp past calls per minute", []string{keys.ScopeMCP}, "mcp", 2, keys.CodeRateLimited},
		{"hosted has no per-minute limit here", []string{keys.ScopeHosted}, "hosted", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _, err := svc.CreateKey(ctx, "acme", tc.name, tc.scopes, keys.Limits{CallsPerMinute: 1})
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for i := range tc.calls {
				tk, err := svc.Limit(ctx, keys.Admission{KeyID: k.ID, Face: tc.face, Tool: "get_time", Lease: tc.name + string(rune('a'+i))})
				if err == nil {
					tk.Done(0)
				}
				last = err
			}
			var ref *keys.Refusal
			switch {
			case tc.code == "" && last != nil:
				t.Errorf("refused: %v", last)
			case tc.code != "" && (!errors.As(last, &ref) || ref.Code != tc.code):
				t.Errorf("got %v, want %s", last, tc.code)
			}
		})
	}
}
