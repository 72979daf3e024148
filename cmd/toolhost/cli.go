package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/internal/toolhost"
)

// command is one subcommand of the binary. Its flags are not listed here:
// every usage text is derived from the flag set the command itself defines
// (see describe), so a flag added to a command appears in its --help, in
// the top-level usage and in docs/operations.md's reference without further
// work.
type command struct {
	name    string
	args    string // positional arguments in the synopsis, e.g. "TOOL ['JSON']"
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// subcommands, when set, are listed instead of the command's own flags
	// (keys create|list|…): each is described by running the command with
	// its name.
	subcommands []string
}

// commands is the command table, in the order the usage lists them.
func commands() []command {
	return []command{
		{name: "serve", summary: "the HTTP server: MCP on /mcp, hosted tools on /v1, the REST API, /healthz",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return exitCodeOf(cmdServe(ctx, args, stderr), stderr, "serve")
			}},
		{name: "stdio", summary: "the MCP server over stdin/stdout, for Claude Desktop and other stdio clients; logs go to stderr",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return exitCodeOf(cmdStdio(ctx, args, stderr), stderr, "stdio")
			}},
		{name: "call", args: "TOOL ['JSON']", summary: "one call through the pipeline, printed as JSON; exit 0 success, 1 tool error, 2 usage error, 3 toolhost could not start what the call needs",
			run: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
				return cmdCall(ctx, args, stdin, stdout, stderr)
			}},
		{name: "mcp-config", summary: "prints a ready MCP client configuration for this binary (absolute paths); --install writes it into Claude Desktop's config",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return cmdMCPConfig(ctx, args, stdout, stderr)
			}},
		{name: "journal", summary: "lists recent executions from the journal (read-only); journal prune --before DATE deletes older ones",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				if len(args) > 0 && args[0] == "prune" {
					return cmdJournalPrune(ctx, args[1:], stdout, stderr)
				}
				return cmdJournal(ctx, args, stdout, stderr)
			}},
		{name: "jobs", args: "SUBCOMMAND", summary: "deferred calls (background jobs) in the store the server uses: list, show ID, cancel ID, limits, delivery TOOL [MODE]",
			subcommands: jobSubcommands,
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return cmdJobs(ctx, args, stdout, stderr)
			}},
		{name: "keys", args: "SUBCOMMAND", summary: "API keys, limits and usage in the store the server uses",
			subcommands: keySubcommands,
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return cmdKeys(ctx, args, stdout, stderr)
			}},
		{name: "mcp-servers", args: "probe URL", summary: "toolhost's MCP client against one remote MCP server: initialize, the tools as toolhost would list them, and with --call one call through the pipeline", subcommands: []string{"probe"},
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return cmdMCPServers(ctx, args, stdout, stderr)
			}},
		{name: "check", summary: "loads the config file and builds every tool and /v1 route as serve would, then exits: 0 when serve would start with it",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				return cmdCheck(ctx, args, stdout, stderr)
			}},
		{name: "version", summary: "prints the version",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				fs := newFlagSet("version")
				if err := parseArgs(ctx, fs, args); err != nil {
					return exitCodeOf(err, stderr, "version")
				}
				fmt.Fprintf(stdout, "toolhost %s\n", version)
				return exitOK
			}},
		{name: "help", args: "[COMMAND]", summary: "this text, or one command's flags",
			run: func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
				if err := parseArgs(ctx, newFlagSet("help"), args); err != nil {
					return exitCodeOf(err, stderr, "help")
				}
				if len(args) == 0 {
					printUsage(ctx, stdout)
					return exitOK
				}
				return run(ctx, append(args, "--help"), nil, stdout, stderr)
			}},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// cliContext carries what the flag parser needs from the dispatcher: where
// help goes, and whether the command is only being described.
type cliContext struct {
	stdout, stderr io.Writer
	// describe, when set, receives the command's flag set instead of parsing;
	// the command then returns without doing anything.
	describe func(*flag.FlagSet)
}

type cliKey struct{}

func withCLI(ctx context.Context, c *cliContext) context.Context {
	return context.WithValue(ctx, cliKey{}, c)
}

func cliFrom(ctx context.Context) *cliContext {
	if c, ok := ctx.Value(cliKey{}).(*cliContext); ok {
		return c
	}
	return &cliContext{stdout: io.Discard, stderr: io.Discard}
}

// errDone says the parser has already answered (printed help, or a flag
// error with the usage); the command exits with code and prints nothing more.
type errDone struct{ code int }

func (e errDone) Error() string { return fmt.Sprintf("exit %d", e.code) }

// exitCodeOf turns a command's error into its exit code, printing it unless
// the parser already did.
func exitCodeOf(err error, stderr io.Writer, name string) int {
	if err == nil {
		return exitOK
	}
	var done errDone
	if errors.As(err, &done) {
		return done.code
	}
	fmt.Fprintf(stderr, "toolhost %s: %v\n", name, err)
	if isUsage(err) {
		fmt.Fprintf(stderr, "Run `toolhost %s --help` for its flags.\n", name)
		return exitUsage
	}
	var se startupError
	if errors.As(err, &se) {
		return exitStartup
	}
	return 1
}

// isUsage reports whether err is the command line's or the config's
// fault: a usage error, or a toolhost.ConfigError from building the app.
func isUsage(err error) bool {
	var ue usageError
	var ce toolhost.ConfigError
	return errors.As(err, &ue) || errors.As(err, &ce)
}

// startupError is a failure to start what a command needs (the journal's
// store, run_code's runtimes): the environment, not the command line.
type startupError struct{ error }

func (e startupError) Unwrap() error { return e.error }

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args into fs: flags may come before, between or after
// the positional arguments (`keys set-limits KEY_ID --calls-per-minute 120`),
// `--` ends the flags, and every flag not given is then taken from its
// environment variable TOOLHOST_<FLAG>. -h/--help prints the command's usage
// to stdout; a flag error prints the error and the usage to stderr; both
// come back as errDone.
//
// The standard library's parser stops at the first positional argument; the
// loop below resumes it after each one, which keeps flag.FlagSet (and every
// flag other commands define on it) rather than switching libraries.
func parseArgs(ctx context.Context, fs *flag.FlagSet, args []string) error {
	cc := cliFrom(ctx)
	if cc.describe != nil {
		cc.describe(fs)
		return errDone{exitOK}
	}
	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeCommandUsage(cc.stdout, fs)
				return errDone{exitOK}
			}
			fmt.Fprintf(cc.stderr, "toolhost %s: %v\n\n", fs.Name(), flagErrorText(fs, err))
			writeCommandUsage(cc.stderr, fs)
			return errDone{exitUsage}
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			positional = append(positional, left...)
			break
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
	// Leave the positional arguments in fs.Args().
	_ = fs.Parse(append([]string{"--"}, positional...))
	if err := envDefaults(fs); err != nil {
		fmt.Fprintf(cc.stderr, "toolhost %s: %v\n\n", fs.Name(), err)
		writeCommandUsage(cc.stderr, fs)
		return errDone{exitUsage}
	}
	return nil
}

// boolValues are the spellings strconv.ParseBool accepts.
const boolValues = "true, false, 1, 0, t, f, TRUE, FALSE, True, False"

// flagErrorText rewords the standard library's flag errors where they leave
// a user guessing (a bad boolean does not say what would be accepted).
func flagErrorText(fs *flag.FlagSet, err error) string {
	msg := strings.NewReplacer("defined: -", "defined: --", "for -", "for --", "flag: -", "flag: --").Replace(err.Error())
	if strings.Contains(msg, "invalid boolean") || strings.Contains(msg, "parse error") {
		for _, f := range flags(fs) {
			if isBool(f) && strings.Contains(msg, "-"+f.Name) {
				return fmt.Sprintf("%s (accepted values: %s)", msg, boolValues)
			}
		}
	}
	return msg
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func flags(fs *flag.FlagSet) []*flag.Flag {
	var out []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
	return out
}

// settings are the flags that also read TOOLHOST_<FLAG> from the
// environment: where and how the process runs (its address, state, store,
// config file, logging), the same for every invocation of a deployment. A
// flag that says what one invocation does (keys create --name, call
// --slot, the journal's filters, mcp-config --install) is read from the
// command line only: a variable left in the environment must not create a
// key under a stale name. docs/configuration.md lists them.
var settings = map[string]bool{
	"addr": true, "config": true, "data": true, "dev": true, "log-format": true, "log-level": true,
	"postgres": true, "redis": true, "runtimes": true, "stateless": true, "test-tools": true,
}

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "TOOLHOST_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// describe returns the flag set command name (e.g. "serve", "keys create")
// defines, without running it.
func describe(ctx context.Context, name string) *flag.FlagSet {
	words := strings.Fields(name)
	c, ok := findCommand(words[0])
	if !ok {
		return nil
	}
	var got *flag.FlagSet
	cc := &cliContext{stdout: io.Discard, stderr: io.Discard, describe: func(fs *flag.FlagSet) { got = fs }}
	c.run(withCLI(ctx, cc), words[1:], nil, io.Discard, io.Discard)
	return got
}

// synopsis is "toolhost NAME ARGS" for a flag set's name.
func synopsis(name string) (string, string) {
	words := strings.Fields(name)
	c, ok := findCommand(words[0])
	if !ok {
		return "toolhost " + name, ""
	}
	if len(words) > 1 {
		subs := keySynopsis
		if c.name == "jobs" {
			subs = jobSynopsis
		}
		if s, ok := subs[words[1]]; ok {
			return "toolhost " + name + s.args, s.summary
		}
	}
	args := ""
	if c.args != "" {
		args = " " + c.args
	}
	return "toolhost " + c.name + args, c.summary
}

// writeCommandUsage prints one command's usage: its synopsis, what it does
// and every flag with its environment variable and default.
func writeCommandUsage(w io.Writer, fs *flag.FlagSet) {
	syn, summary := synopsis(fs.Name())
	fmt.Fprintf(w, "Usage: %s [flags]\n", syn)
	if summary != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(summary, 78, ""))
	}
	if c, ok := findCommand(fs.Name()); ok && len(c.subcommands) > 0 {
		fmt.Fprintf(w, "\nSubcommands (toolhost %s SUBCOMMAND --help for one):\n", c.name)
		for _, sub := range c.subcommands {
			s, summary := synopsis(c.name + " " + sub)
			fmt.Fprintf(w, "  %s\n%s\n", s, wrap(summary, 78, "      "))
		}
		return
	}
	fl := flags(fs)
	if len(fl) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFlags (a setting also reads the environment variable shown; a flag on the command line wins):\n")
	writeFlags(w, fl)
}

// writeFlags lists flags as "--name VALUE   $ENV   (default ...)" with the
// help text below.
func writeFlags(w io.Writer, fl []*flag.Flag) {
	sort.Slice(fl, func(i, j int) bool { return fl[i].Name < fl[j].Name })
	for _, f := range fl {
		value, help := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if !isBool(f) {
			if value == "" {
				value = "VALUE"
			}
			head += " " + strings.ToUpper(value)
		}
		def := f.DefValue
		switch {
		case isBool(f):
			def = "default " + def + "; " + strings.ReplaceAll(boolValues, ", TRUE, FALSE, True, False", "")
		case def == "" && strings.Contains(help, "default"):
			def = ""
		case def == "":
			def = "no default"
		default:
			def = "default " + def
		}
		if settings[f.Name] {
			if def != "" {
				def += "; "
			}
			def += "env " + envName(f.Name)
		}
		// "default X" stays on one line (\x00 is no space to wrap).
		def = strings.Replace(def, "default ", "default\x00", 1)
		text := help
		if def != "" {
			text += " (" + def + ")"
		}
		text = wrap(text, 72, "      ")
		fmt.Fprintf(w, "%s\n%s\n", head, strings.ReplaceAll(text, "\x00", " "))
	}
}

// printUsage is the top-level usage: every command with every flag it
// takes, derived from the commands' own flag sets.
func printUsage(ctx context.Context, w io.Writer) {
	fmt.Fprintf(w, "toolhost %s — tools for language models over MCP and /v1\n\nUsage: toolhost COMMAND [flags] [arguments]\n\nCommands:\n", version)
	for _, c := range commands() {
		syn, _ := synopsis(c.name)
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(syn, "toolhost "))
		fmt.Fprintf(w, "%s\n", wrap(c.summary, 76, "      "))
		names := c.subcommands
		if len(names) == 0 {
			names = []string{""}
		}
		for _, sub := range names {
			fs := describe(ctx, strings.TrimSpace(c.name+" "+sub))
			if fs == nil {
				continue
			}
			var parts []string
			for _, f := range flags(fs) {
				value, _ := flag.UnquoteUsage(f)
				if isBool(f) {
					parts = append(parts, "[--"+f.Name+"]")
				} else {
					if value == "" {
						value = "VALUE"
					}
					parts = append(parts, "[--"+f.Name+" "+strings.ToUpper(value)+"]")
				}
			}
			if sub != "" {
				parts = append([]string{c.name, sub}, parts...)
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "%s\n", wrap(strings.Join(parts, " "), 74, "      "))
			}
		}
	}
	fmt.Fprint(w, `
Every flag can also be set in the environment as TOOLHOST_<FLAG> (upper
case, dashes as underscores): TOOLHOST_ADDR=127.0.0.1:9000 toolhost serve.
A flag on the command line wins. toolhost COMMAND --help lists a command's
flags with their variables and defaults. Documentation: README.md and docs/.
`)
}

// wrap breaks s into lines of at most width characters, each after the
// first prefixed with indent (the first gets it too).
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(word) > width+len(indent) {
			b.WriteString(line)
			b.WriteString("\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	b.WriteString(line)
	return b.String()
}
