package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// toolhost call of a tool whose policy asks: without a terminal on stdin
// the call ends approval_required (exit 1) and nothing runs; --approve
// approves it, and it runs.
func TestCallAsksForApprovalOrRefuses(t *testing.T) {
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"tools": {"require_approval": {"roll_dice": "always"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "call", "--data", data, "--config", cfg, "roll_dice", `{"sides":6}`)
	if code != exitToolError || !strings.Contains(out, `"code": "approval_required"`) || !strings.Contains(out, `"approval_id": "apr_`) ||
		strings.Contains(out, `"total"`) {
		t.Fatalf("without a terminal: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "call", "--data", data, "--config", cfg, "--approve", "roll_dice", `{"sides":6}`)
	if code != exitOK || !strings.Contains(out, `"total"`) {
		t.Fatalf("--approve: exit %d\n%s\n%s", code, out, errOut)
	}
	// A tool the policy does not name runs without asking.
	if code, out, _ = runCLI(t, "call", "--data", data, "--config", cfg, "get_time"); code != exitOK {
		t.Fatalf("get_time: exit %d %s", code, out)
	}
	// A bad policy in the config is a usage error.
	bad := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(bad, []byte(`{"tools": {"require_approval": {"roll_dice": "sometimes"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = runCLI(t, "call", "--data", data, "--config", bad, "roll_dice"); code != exitUsage || !strings.Contains(errOut, "tools.require_approval.roll_dice") {
		t.Fatalf("bad config: exit %d %s", code, errOut)
	}
}

func TestTerminalPromptAnswers(t *testing.T) {
	req := tools.ApprovalRequest{Policy: approval.BySideEffect, Description: "Deletes\x1b[2J a note\u202e",
		Approval: approval.Approval{ID: "apr_000000000000000000000001", Tool: "srv__delete", SideEffectLevel: "irreversible",
			Args: json.RawMessage(`{"path":"\u001b[31mred\u001b[0m\r\u202etxt.exe","zw":"a\u200bb"}`), ExpiresAt: time.Unix(0, 0).UTC()}}
	tests := []struct {
		input   string
		approve bool
		err     bool
	}{
		{"y\n", true, false},
		{"yes\n", true, false},
		{"  YES \r\n", true, false},
		{"n\n", false, false},
		{"\n", false, false},
		{"yess\n", false, false},
		{"y es\n", false, false},
		{"", false, true}, // end of input: no answer
		{"y", true, false},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		d, err := askTerminal(context.Background(), strings.NewReader(tc.input), &out, req)
		if d.Approve != tc.approve || (err != nil) != tc.err {
			t.Errorf("%q: approve=%v err=%v", tc.input, d.Approve, err)
		}
		if !tc.err && (d.Via != approval.ViaTerminal || d.By != "terminal") {
			t.Errorf("%q: decision %+v", tc.input, d)
		}
		shown := out.String()
		for _, bad := range []string{"\x1b", "\r", "\u202e", "\u200b"} {
			if strings.Contains(shown, bad) {
				t.Errorf("the prompt shows %q raw:\n%s", bad, shown)
			}
		}
		if !strings.Contains(shown, "srv__delete") || !strings.Contains(shown, "apr_000000000000000000000001") || !strings.Contains(shown, "[y/N]") {
			t.Errorf("prompt:\n%s", shown)
		}
	}
}

// /dev/null and pipes are not terminals, though /dev/null is a character
// device: a call fed from them is not asked.
func TestOnlyATerminalIsAsked(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, in := range map[string]io.Reader{"dev/null": null, "pipe": r, "reader": strings.NewReader("y\n")} {
		if confirmer(false, in, io.Discard) != nil {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
	if confirmer(true, null, io.Discard) == nil {
		t.Error("--approve gives no confirmer")
	}
}

func TestTerminalPromptEndsWhenTheCallerGoesAway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe() // never written: the user has not answered
	defer w.Close()
	cancel()
	if _, err := askTerminal(ctx, r, io.Discard, tools.ApprovalRequest{}); err == nil {
		t.Fatal("a cancelled prompt answered")
	}
}
