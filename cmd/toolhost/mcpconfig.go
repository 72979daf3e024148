package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// mcpClients are the clients mcp-config knows, each with the shape its
// documentation gives for a stdio server and where that configuration lives.
var mcpClients = map[string]struct {
	// serversKey is the top-level object holding the servers.
	serversKey string
	// typed clients want "type": "stdio" in each server.
	typed bool
	where string
}{
	"claude-desktop": {"mcpServers", false, "claude_desktop_config.json (Settings → Developer → Edit Config), or run with --install"},
	"claude-code":    {"mcpServers", true, ".mcp.json at the root of your project (shared with the team), or ~/.claude.json"},
	"cursor":         {"mcpServers", false, "~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project)"},
	"vscode":         {"servers", true, ".vscode/mcp.json in your workspace"},
}

func mcpClientNames() string {
	var names []string
	for n := range mcpClients {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// stdioServer is one stdio server entry as the clients write it.
type stdioServer struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// mcpConfigJSON is the configuration client needs to launch `bin stdio
// args...` as the MCP server name. The README's Claude Desktop snippet is
// this function's output for placeholder paths (TestREADMEClaudeDesktopSnippet).
func mcpConfigJSON(client, name, bin string, args []string) ([]byte, error) {
	spec, ok := mcpClients[client]
	if !ok {
		return nil, usageError{fmt.Errorf("--client %q: want one of %s", client, mcpClientNames())}
	}
	srv := stdioServer{Command: bin, Args: append([]string{"stdio"}, args...)}
	if spec.typed {
		srv.Type = "stdio"
	}
	doc := map[string]map[string]stdioServer{spec.serversKey: {name: srv}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// claudeDesktopConfigPath is Claude Desktop's config file: under the user
// configuration folder, which is ~/Library/Application Support on macOS and
// $XDG_CONFIG_HOME (~/.config) on Linux.
func claudeDesktopConfigPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "Claude", "claude_desktop_config.json"), nil
}

func cmdMCPConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp-config")
	client := fs.String("client", "claude-desktop", "`CLIENT` to configure: "+mcpClientNames())
	name := fs.String("name", "toolhost", "server `NAME` in the client's configuration")
	data := fs.String("data", "./data", "`DIR` for the server's state, made absolute in the output (share it with `make run` to see both in one journal)")
	config := fs.String("config", "", "config `FILE` for the server, made absolute in the output")
	runtimes := fs.String("runtimes", "", "`DIR` of run_code's runtimes, made absolute in the output (default: the server searches beside its binary)")
	lang := fs.String("lang", "", "`LANGUAGE` of tool descriptions, en or zh (default en)")
	install := fs.Bool("install", false, "write the configuration into Claude Desktop's config file (Linux and macOS), keeping its other servers and a backup of the file")
	if err := parseArgs(ctx, fs, args); err != nil {
		return exitCodeOf(err, stderr, "mcp-config")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhost mcp-config: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-config: cannot find this binary's path: %v\n", err)
		return exitStartup
	}
	serverArgs := []string{"--data", absPath(*data)}
	if *config != "" {
		serverArgs = append(serverArgs, "--config", absPath(*config))
	}
	if *runtimes != "" {
		serverArgs = append(serverArgs, "--runtimes", absPath(*runtimes))
	}
	if *lang != "" {
		serverArgs = append(serverArgs, "--lang", *lang)
	}
	out, err := mcpConfigJSON(*client, *name, bin, serverArgs)
	if err != nil {
		return exitCodeOf(err, stderr, "mcp-config")
	}
	if !*install {
		_, _ = stdout.Write(out)
		fmt.Fprintf(stderr, "Put this in %s.\n", mcpClients[*client].where)
		return exitOK
	}
	if *client != "claude-desktop" {
		fmt.Fprintf(stderr, "toolhost mcp-config: --install writes Claude Desktop's config only; for %s put the output without --install in %s\n", *client, mcpClients[*client].where)
		return exitUsage
	}
	path, err := claudeDesktopConfigPath()
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-config: %v\n", err)
		return exitStartup
	}
	backup, err := installClaudeDesktop(path, *name, out)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-config: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Wrote server %q into %s.\n", *name, path)
	if backup != "" {
		fmt.Fprintf(stdout, "The previous file is kept as %s.\n", backup)
	}
	fmt.Fprintln(stdout, "Restart Claude Desktop to load it.")
	return exitOK
}

// installClaudeDesktop merges server name from entry (mcpConfigJSON's
// output) into the config file at path: every other field and server is
// kept, an existing file is copied to a timestamped backup first, and the
// new file replaces the old one atomically. A file that is not a JSON
// object is left alone.
func installClaudeDesktop(path, name string, entry []byte) (backup string, err error) {
	var newDoc struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(entry, &newDoc); err != nil {
		return "", err
	}
	doc := map[string]json.RawMessage{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return "", err
	default:
		if len(bytes.TrimSpace(old)) > 0 {
			if err := json.Unmarshal(old, &doc); err != nil {
				return "", fmt.Errorf("%s is not a JSON object (%v); fix or move it, then run again", path, err)
			}
		}
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := doc["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return "", fmt.Errorf("%s: mcpServers is not an object (%v); fix it, then run again", path, err)
		}
	}
	servers[name] = newDoc.Servers[name]
	if doc["mcpServers"], err = json.Marshal(servers); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	mode := fs.FileMode(0o600)
	if old != nil {
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
		if backup, err = writeBackup(path, old, mode); err != nil {
			return "", err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".claude_desktop_config-*.json")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return backup, nil
}

// writeBackup copies old to a new file beside path named after the time,
// never overwriting an earlier backup.
func writeBackup(path string, old []byte, mode fs.FileMode) (string, error) {
	stamp := path + ".bak-" + time.Now().Format("20060102-150405")
	for i := 1; ; i++ {
		name := stamp
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backup %s: %w", name, err)
		}
		if _, err := f.Write(old); err != nil {
			f.Close()
			return "", fmt.Errorf("backup %s: %w", name, err)
		}
		return name, f.Close()
	}
}
