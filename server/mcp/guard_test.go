package mcp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// rawPost sends one JSON-RPC body to /mcp as a client would.
func rawPost(t *testing.T, url, session, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func initBody(clientInfo string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":` + clientInfo + `}}`
}

func initialize(t *testing.T, url, clientInfo string) (string, int) {
	t.Helper()
	resp, body := rawPost(t, url, "", initBody(clientInfo))
	if resp.StatusCode != 200 {
		return body, resp.StatusCode
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	r2, b2 := rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r2.StatusCode >= 300 {
		t.Fatalf("initialized: %d %s", r2.StatusCode, b2)
	}
	return sid, 200
}

// /mcp refuses what encoding/json would read leniently: duplicate keys in
// the envelope or params (the last name would run) and data after the body.
func TestMCPRefusesDuplicateKeysAndTrailingData(t *testing.T) {
	e := start(t, mcpface.Options{})
	sid, _ := initialize(t, e.url, `{"name":"t","version":"1"}`)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"roll_dice","name":"get_time","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"tools/list","params":{"name":"get_time","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_time","arguments":{}}} trailing`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_time","arguments":{}}}{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	} {
		resp, out := rawPost(t, e.url, sid, body)
		if resp.StatusCode != 400 || !strings.Contains(out, "-32700") {
			t.Errorf("%s: %d %s", body, resp.StatusCode, out)
		}
	}
	// An ordinary call still works.
	resp, out := rawPost(t, e.url, sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_time","arguments":{}}}`)
	if resp.StatusCode != 200 || !strings.Contains(out, "utc") && !strings.Contains(out, "UTC") {
		t.Errorf("get_time: %d %.300s", resp.StatusCode, out)
	}
}

// A huge clientInfo is refused, and sessions are capped per key: the
// session idle the longest makes room for a new one.
func TestMCPCapsClientInfoAndSessions(t *testing.T) {
	e := start(t, mcpface.Options{Limits: mcpface.Limits{SessionsPerKey: 3}})
	big := fmt.Sprintf(`{"name":"%s","version":"1"}`, strings.Repeat("x", 60<<10))
	if out, code := initialize(t, e.url, big); code != 413 || !strings.Contains(out, "an initialize request is larger") {
		t.Fatalf("60 KB clientInfo: %d %s", code, out)
	}
	var ids []string
	for i := 0; i < 5; i++ {
		sid, code := initialize(t, e.url, `{"name":"t","version":"1"}`)
		if code != 200 {
			t.Fatalf("session %d: %d %s", i, code, sid)
		}
		ids = append(ids, sid) // in order of use: the guard counts requests, it reads no clock
	}
	ping := func(sid string) int {
		resp, _ := rawPost(t, e.url, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return resp.StatusCode
	}
	for i, sid := range ids {
		want := 200
		if i < 2 {
			want = 404 // evicted, oldest first
		}
		if got := ping(sid); got != want {
			t.Errorf("session %d: ping %d, want %d", i, got, want)
		}
	}
}

// Sessions close after the idle timeout by default (30 min); a short one
// set in the options closes them sooner.
func TestMCPSessionsExpireWhenIdle(t *testing.T) {
	// In a bubble, with requests served in process: the session's idle
	// timer runs on the fake clock, and synctest.Wait lets its close finish.
	synctest.Test(t, func(t *testing.T) {
		exec, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
		if err != nil {
			t.Fatal(err)
		}
		defer exec.Journal().Close() // its writer goroutine belongs to the bubble
		h := server.New(server.Options{MCP: mcpface.New(exec, mcpface.Options{SessionTimeout: 200 * time.Millisecond}).Handler()}).Handler()
		post := func(sid, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		init := post("", initBody(`{"name":"t","version":"1"}`))
		sid := init.Header().Get("Mcp-Session-Id")
		if init.Code != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", init.Code, init.Body)
		}
		if rec := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code >= 300 {
			t.Fatalf("initialized: %d %s", rec.Code, rec.Body)
		}
		const ping = `{"jsonrpc":"2.0","id":9,"method":"ping"}`
		// Fake time: the clock moves to just short of the timeout, where
		// the session still answers, then past it.
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if rec := post(sid, ping); rec.Code != 200 {
			t.Fatalf("ping within the idle timeout: %d %s, want 200", rec.Code, rec.Body)
		}
		time.Sleep(600 * time.Millisecond)
		synctest.Wait()
		if rec := post(sid, ping); rec.Code != 404 {
			t.Fatalf("ping after the idle timeout: %d, want 404", rec.Code)
		}
	})
}

// An initialize body over its cap (clientInfo's cap + 16 KiB) is refused
// from its start: the rest is never read nor parsed (here it is not even
// JSON; net/http discards what the client sends). Before, the server read
// and checked whole bodies (up to 4 MiB) before refusing the clientInfo.
func TestMCPRefusesALargeInitializeFromItsStart(t *testing.T) {
	e := start(t, mcpface.Options{})
	head := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"version":"1","name":"`
	body := head + strings.Repeat("x", 64<<10) + strings.Repeat("\x00}}{[", 100_000)
	resp, out := rawPost(t, e.url, "", body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(out, "an initialize request is larger than 24576 bytes") || !strings.Contains(out, "-32602") {
		t.Fatalf("%d %.300s", resp.StatusCode, out)
	}
	// The same without a Content-Length (chunked): read up to the cap.
	req, _ := http.NewRequest("POST", e.url, io.MultiReader(strings.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	chunked, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(chunked.Body)
	chunked.Body.Close()
	if chunked.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "an initialize request is larger") {
		t.Fatalf("chunked: %d %.300s", chunked.StatusCode, b)
	}

	// A clientInfo over its cap in a body under the initialize cap is
	// refused as before; other sessionless bodies larger than that cap are
	// read whole and served.
	big := fmt.Sprintf(`{"name":"%s","version":"1"}`, strings.Repeat("x", 12<<10))
	if out, code := initialize(t, e.url, big); code != 400 || !strings.Contains(out, "clientInfo is") {
		t.Fatalf("12 KB clientInfo: %d %s", code, out)
	}
	params := fmt.Sprintf(`{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"pad":"%s"}},"clientInfo":{"name":"t","version":"1"}}`, strings.Repeat("x", 30<<10))
	if _, out := rawPost(t, e.url, "", `{"params":`+params+`,"jsonrpc":"2.0","id":1,"method":"initialize"}`); strings.Contains(out, "an initialize request is larger") {
		t.Fatalf("a body whose method comes after its params is read whole: %s", out)
	}
	resp, out = rawPost(t, e.url, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_time","arguments":{},"_meta":{"pad":"`+strings.Repeat("x", 40<<10)+`"}}}`)
	if resp.StatusCode == http.StatusRequestEntityTooLarge || strings.Contains(out, "initialize request") {
		t.Fatalf("a sessionless tools/call of 40 KiB: %d %.300s", resp.StatusCode, out)
	}
}
