package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// confirmer is how toolhost call answers a call that needs its user's
// approval: --approve approves it; a terminal on stdin asks (y/N); else
// nil, and the call ends approval_required (exit 1).
func confirmer(approve bool, stdin io.Reader, stderr io.Writer) tools.Confirmer {
	switch {
	case approve:
		return func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
			return approval.Decision{Approve: true, By: "cli:--approve", Via: "cli"}, nil
		}
	case isTerminalReader(stdin):
		return func(ctx context.Context, req tools.ApprovalRequest) (approval.Decision, error) {
			return askTerminal(ctx, stdin, stderr, req)
		}
	}
	return nil
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTTY(f)
}

// askTerminal shows the call (tool, what it does, its normalized
// arguments) and reads one line: y or yes approves, anything else
// declines. What the call carries is shown escaped: an argument cannot
// move the cursor, recolour or reorder the prompt.
func askTerminal(ctx context.Context, in io.Reader, out io.Writer, req tools.ApprovalRequest) (approval.Decision, error) {
	a := req.Approval
	fmt.Fprintf(out, "%s (%s, require_approval %s) asks to run:\n  %s\n  arguments: %s\n  approval %s expires %s\n",
		safe(a.Tool), safe(a.SideEffectLevel), req.Policy, safe(req.Description), safe(string(a.Args)), a.ID,
		a.ExpiresAt.Format("15:04:05 MST"))
	fmt.Fprint(out, "Run it? [y/N] ")
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(in).ReadString('\n')
		line <- s
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return approval.Decision{}, ctx.Err()
	case s := <-line:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "y", "yes":
			return approval.Decision{Approve: true, By: "terminal", Via: approval.ViaTerminal}, nil
		case "":
			if !strings.HasSuffix(s, "\n") {
				return approval.Decision{}, errors.New("no answer on the terminal (end of input)")
			}
		}
		return approval.Decision{By: "terminal", Via: approval.ViaTerminal, Reason: "declined on the terminal"}, nil
	}
}

// safe escapes what a terminal would act on: control characters (ESC of
// ANSI sequences, carriage returns) and invisible format characters
// (bidirectional overrides, zero-width ones).
func safe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
