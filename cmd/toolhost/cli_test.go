package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command answers -h/--help with its usage on stdout and exit 0, and
// the usage lists every flag the command defines, with its environment
// variable and default — derived from the flag set, so a flag added later
// is listed without touching the usage code.
func TestEveryCommandHasHelpListingEveryFlag(t *testing.T) {
	ctx := t.Context()
	var names []string
	for _, c := range commands() {
		if len(c.subcommands) == 0 {
			names = append(names, c.name)
		}
		for _, sub := range c.subcommands {
			names = append(names, c.name+" "+sub)
		}
	}
	for _, name := range names {
		fs := describe(ctx, name)
		if fs == nil {
			t.Fatalf("%s: no flag set", name)
		}
		for _, help := range []string{"-h", "--help", "-help"} {
			t.Run(name+" "+help, func(t *testing.T) {
				code, out, errOut := runCLI(t, append(strings.Fields(name), help)...)
				if code != exitOK || errOut != "" {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if !strings.HasPrefix(out, "Usage: toolhost "+name) {
					t.Fatalf("usage starts %q", firstLine(out))
				}
				fs.VisitAll(func(f *flag.Flag) {
					if !strings.Contains(out, "--"+f.Name) {
						t.Errorf("--%s missing from:\n%s", f.Name, out)
					}
					// A setting names its variable; no other flag has one.
					if hasEnv := strings.Contains(out, envName(f.Name)+")"); hasEnv != settings[f.Name] {
						t.Errorf("--%s: %s shown = %v, want %v:\n%s", f.Name, envName(f.Name), hasEnv, settings[f.Name], out)
					}
					if f.DefValue != "" && !strings.Contains(out, "default "+f.DefValue) {
						t.Errorf("--%s: default %q missing", f.Name, f.DefValue)
					}
				})
			})
		}
	}
}

// The top-level usage names every command and every flag of each.
func TestTopLevelUsageListsEveryCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, _ := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		for _, c := range commands() {
			if !strings.Contains(out, "\n  "+c.name) {
				t.Errorf("%v: command %s missing", args, c.name)
			}
			names := c.subcommands
			if len(names) == 0 {
				names = []string{""}
			}
			for _, sub := range names {
				describe(t.Context(), strings.TrimSpace(c.name+" "+sub)).VisitAll(func(f *flag.Flag) {
					if !strings.Contains(out, "[--"+f.Name) {
						t.Errorf("%s %s: --%s missing from the top-level usage", c.name, sub, f.Name)
					}
				})
			}
		}
	}
	// The flags the first newcomer report found missing.
	_, out, _ := runCLI(t, "help")
	for _, want := range []string{"--stateless", "--runtimes", "--postgres", "--redis", "--lang", "--idempotency-key"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s missing", want)
		}
	}
	// No arguments: the usage on stderr, exit 2.
	if code, out, errOut := runCLI(t); code != exitUsage || out != "" || !strings.Contains(errOut, "Commands:") {
		t.Fatalf("no arguments: exit %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestCommandLineErrors(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  []string
	}{
		{"mistyped flag prints the usage", []string{"serve", "--adr", "x"}, nil, exitUsage,
			[]string{"flag provided but not defined: --adr", "Usage: toolhost serve", "--addr ADDRESS"}},
		{"bad boolean in the environment names the values", []string{"serve", "--data", data}, map[string]string{"TOOLHOST_DEV": "yes"}, exitUsage,
			[]string{`TOOLHOST_DEV="yes" is not a boolean; accepted values: true, false`}},
		{"bad boolean on the command line names the values", []string{"serve", "--dev=yes"}, nil, exitUsage,
			[]string{"accepted values: true, false"}},
		{"unknown keys subcommand", []string{"keys", "rotate"}, nil, exitUsage, []string{`unknown subcommand "rotate"`, "set-limits"}},
		{"keys without a subcommand", []string{"keys"}, nil, exitUsage, []string{"Subcommands", "create", "usage"}},
		{"help of an unknown command", []string{"help", "nope"}, nil, exitUsage, []string{`unknown command "nope"`}},
		{"bad log level", []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "loud"}, nil, exitUsage, []string{"--log-level"}},
		// Only settings read the environment: a TOOLHOST_NAME left exported
		// must not name a new key (it did, when every flag read one).
		{"an invocation's flag reads no environment variable", []string{"keys", "create", "--data", data, "--account", "acme"},
			map[string]string{"TOOLHOST_NAME": "stale", "TOOLHOST_SCOPES": "admin"}, exitUsage, []string{"a key needs a name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, _, errOut := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, errOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// Flags may follow positional arguments, as the README wrote
// `toolhost keys set-limits KEY_ID --calls-per-minute 120`; `--` ends them.
func TestFlagsAfterPositionalArguments(t *testing.T) {
	data := t.TempDir()
	code, _, errOut := runCLI(t, "keys", "create", "--data", data, "--account", "acme", "--name", "ci")
	if code != exitOK {
		t.Fatalf("create: exit %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "keys", "list", "--data", data, "--json")
	if code != exitOK {
		t.Fatalf("list: exit %d %s", code, errOut)
	}
	var ks []struct {
		ID     string `json:"id"`
		Limits struct {
			CPM int `json:"calls_per_minute"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &ks); err != nil || len(ks) != 1 {
		t.Fatalf("list: %v %s", err, out)
	}
	for _, args := range [][]string{
		{"keys", "set-limits", ks[0].ID, "--calls-per-minute", "120", "--data", data},
		{"keys", "set-limits", "--data", data, ks[0].ID, "--calls-per-minute", "120"},
	} {
		code, out, errOut = runCLI(t, args...)
		if code != exitOK || !strings.Contains(out, `"calls_per_minute": 120`) {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	// After --, a word that looks like a flag is an argument.
	code, _, errOut = runCLI(t, "call", "--data", data, "--", "--not-a-flag")
	if code != exitUsage || !strings.Contains(errOut, `unknown tool "--not-a-flag"`) {
		t.Fatalf("after --: exit %d %s", code, errOut)
	}
}

// toolhost call of a builtin does not build run_code's sandbox: no runtime
// is read or compiled and nothing is said about them.
func TestCallOfABuiltinLeavesRunCodeAlone(t *testing.T) {
	t.Setenv("TOOLHOST_RUNTIMES", filepath.Join(t.TempDir(), "nothing-here"))
	data := t.TempDir()
	code, out, errOut := runCLI(t, "call", "--data", data, "roll_dice", `{}`)
	if code != exitOK || !strings.Contains(out, `"total"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if errOut != "" {
		t.Fatalf("a builtin call wrote to stderr: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "wasm-cache")); !os.IsNotExist(err) {
		t.Fatalf("the wasm cache was created: %v", err)
	}
	// run_code itself is still known, and a missing runtime is exit 3 (the
	// installation, not the call, needs fixing), naming what to do.
	code, out, _ = runCLI(t, "call", "--data", data, "run_code", `{"code":"print(1)"}`)
	if code != exitStartup || !strings.Contains(out, "runtime_unavailable") || !strings.Contains(out, "make runtimes") {
		t.Fatalf("run_code without runtimes: exit %d\n%s", code, out)
	}
}

func TestProgressText(t *testing.T) {
	for _, tc := range []struct {
		p, total  float64
		msg, want string
	}{
		{0.6, 0, "running for 0.6 s", "0.6 running for 0.6 s"},
		{3, 10, "", "3/10"},
		{256, 1024, "KiB", "256/1024 KiB"},
	} {
		if got := progressText(tc.p, tc.total, tc.msg); got != tc.want {
			t.Errorf("progressText(%g, %g, %q) = %q, want %q", tc.p, tc.total, tc.msg, got, tc.want)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestKeysHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h", "help"} {
		code, out, _ := runCLI(t, "keys", h)
		if code != exitOK || !strings.Contains(out, "Usage: toolhost keys SUBCOMMAND") || !strings.Contains(out, "set-limits KEY_ID") {
			t.Fatalf("keys %s: exit %d\n%s", h, code, out)
		}
	}
}
