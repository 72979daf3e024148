package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Each client gets the shape its documentation gives for a stdio server.
func TestMCPConfigShapes(t *testing.T) {
	args := []string{"--data", "/srv/toolhost/data"}
	for client, want := range map[string]string{
		"claude-desktop": `{"mcpServers":{"toolhost":{"command":"/opt/toolhost/bin/toolhost","args":["stdio","--data","/srv/toolhost/data"]}}}`,
		"cursor":         `{"mcpServers":{"toolhost":{"command":"/opt/toolhost/bin/toolhost","args":["stdio","--data","/srv/toolhost/data"]}}}`,
		"claude-code":    `{"mcpServers":{"toolhost":{"type":"stdio","command":"/opt/toolhost/bin/toolhost","args":["stdio","--data","/srv/toolhost/data"]}}}`,
		"vscode":         `{"servers":{"toolhost":{"type":"stdio","command":"/opt/toolhost/bin/toolhost","args":["stdio","--data","/srv/toolhost/data"]}}}`,
	} {
		got, err := mcpConfigJSON(client, "toolhost", "/opt/toolhost/bin/toolhost", args)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n%s\nwant %s", client, got, want)
		}
	}
	if _, err := mcpConfigJSON("zed", "toolhost", "/x", nil); err == nil || !strings.Contains(err.Error(), "claude-desktop") {
		t.Fatalf("unknown client: %v", err)
	}
}

// mcp-config prints absolute paths whatever the working directory and the
// relative flags given.
func TestMCPConfigCommandMakesPathsAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := runCLI(t, "mcp-config", "--data", "state", "--config", "c.json")
	if code != exitOK {
		t.Fatalf("exit %d %s", code, errOut)
	}
	var doc struct {
		Servers map[string]stdioServer `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Servers["toolhost"]
	if !filepath.IsAbs(s.Command) {
		t.Fatalf("command %q is not absolute", s.Command)
	}
	want := []string{"stdio", "--data", filepath.Join(dir, "state"), "--config", filepath.Join(dir, "c.json")}
	if !reflect.DeepEqual(s.Args, want) {
		t.Fatalf("args %q, want %q", s.Args, want)
	}
	if !strings.Contains(errOut, "claude_desktop_config.json") {
		t.Fatalf("stderr should say where the JSON goes: %q", errOut)
	}
}

// --install merges into Claude Desktop's file: other servers and fields are
// kept, the old file is backed up, a second install makes a second backup,
// and a file that is not JSON is refused untouched.
func TestMCPConfigInstall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	path, err := claudeDesktopConfigPath()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, home) {
		t.Fatalf("config path %s is not under the test's home", path)
	}
	// No file yet: created.
	if code, out, errOut := runCLI(t, "mcp-config", "--install", "--data", filepath.Join(home, "d")); code != exitOK || !strings.Contains(out, path) {
		t.Fatalf("first install: exit %d\n%s\n%s", code, out, errOut)
	}
	// An existing file with another server and another field.
	orig := `{"globalShortcut": "Ctrl+Space", "mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}`
	_ = os.Remove(path)
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		code, out, errOut := runCLI(t, "mcp-config", "--install", "--data", filepath.Join(home, "d"))
		if code != exitOK || !strings.Contains(out, "kept as") {
			t.Fatalf("install %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
	}
	var doc struct {
		Shortcut string                     `json:"globalShortcut"`
		Servers  map[string]json.RawMessage `json:"mcpServers"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Shortcut != "Ctrl+Space" || len(doc.Servers) != 2 || doc.Servers["fs"] == nil || doc.Servers["toolhost"] == nil {
		t.Fatalf("merged file:\n%s", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want the original 0644 kept", st.Mode().Perm())
	}
	backups, _ := filepath.Glob(path + ".bak-*")
	if len(backups) != 2 {
		t.Fatalf("backups %v, want 2", backups)
	}
	var sawOriginal bool
	for _, bk := range backups {
		if b, _ := os.ReadFile(bk); string(b) == orig {
			sawOriginal = true
		}
	}
	if !sawOriginal {
		t.Fatal("no backup holds the original file")
	}
	// Not JSON: refused, left as it was.
	if err := os.WriteFile(path, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "mcp-config", "--install"); code == exitOK || !strings.Contains(errOut, "not a JSON object") {
		t.Fatalf("broken file: exit %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != "{oops" {
		t.Fatalf("broken file was changed: %q", b)
	}
	// Only Claude Desktop has a file we write.
	if code, _, errOut := runCLI(t, "mcp-config", "--install", "--client", "cursor"); code != exitUsage || !strings.Contains(errOut, ".cursor/mcp.json") {
		t.Fatalf("cursor install: exit %d %s", code, errOut)
	}
}

// The README's Claude Desktop snippet is what mcp-config prints for a
// checkout in /home/you/toolhost: the same code makes both, so they cannot
// drift apart.
func TestREADMEClaudeDesktopSnippet(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := mcpConfigJSON("claude-desktop", "toolhost", "/home/you/toolhost/bin/toolhost", []string{"--data", "/home/you/toolhost/data"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```json\n"+string(want)+"```\n") {
		t.Fatalf("README.md has no JSON block equal to mcp-config's output:\n%s", want)
	}
}
