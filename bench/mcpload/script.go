package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The script mode (-script) measures what issue 15 sets a target for: a
// trivial custom tool with a script handler, called through MCP on an
// idle `toolhost serve` (p50 ≤ 3 ms). It starts the server with script
// handlers enabled, creates the definition with POST /tools/definitions,
// and calls it one at a time with the go-sdk client, each call once the
// JavaScript warm pool is full again and the server has been quiet for a
// moment (as the run_code mode does).

var (
	scriptMode  = flag.Bool("script", false, "measure a trivial script tool (a custom definition) on an idle toolhost through MCP instead (script.go)")
	scriptCalls = flag.Int("script-calls", 200, "with -script: measured calls")
)

const (
	scriptTool   = "bench_echo"
	scriptBody   = "return { ok: true, n: args.n };"
	scriptTarget = 3 * time.Millisecond
)

func runScript(ctx context.Context, cfg config, calls int, out io.Writer) error {
	runtimes, err := filepath.Abs(cfg.runtimes)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(runtimes, "quickjs.wasm")); err != nil {
		return fmt.Errorf("%w (run `make runtimes` first, or pass -runtimes)", err)
	}
	conf, err := os.CreateTemp("", "mcpload-script-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(conf.Name())
	fmt.Fprint(conf, `{"tools":{"enable_unsafe_script_handler":true}}`)
	if err := conf.Close(); err != nil {
		return err
	}
	srv, err := launch(ctx, toolhostTarget(cfg, "--runtimes", runtimes, "--config", conf.Name()), 4)
	if err != nil {
		return err
	}
	defer srv.stop()
	def, _ := json.Marshal(map[string]any{"name": scriptTool, "description": "echoes n",
		"parameters":   map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}},
		"handler_type": "script", "handler": map[string]any{"script": scriptBody}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.base+"/tools/definitions", bytes.NewReader(def))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("create the definition: %d %s", resp.StatusCode, body)
	}
	cs, err := connect(ctx, srv.hc, srv.base+"/mcp", "mcpload-script")
	if err != nil {
		return err
	}
	defer cs.Close()
	var lat []time.Duration
	notWarm := 0
	fmt.Fprintf(os.Stderr, "mcpload: script tool %s: %d calls, each on an idle server with a full JavaScript pool\n", scriptTool, calls)
	for i := -3; i < calls; i++ { // three unmeasured calls first
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := waitWarm(wctx, srv.hc, srv.base, "javascript")
		cancel()
		if err != nil {
			return fmt.Errorf("javascript pool before call %d: %w", i, err)
		}
		time.Sleep(20 * time.Millisecond)
		warm, err := poolWarm(ctx, srv.hc, srv.base, "javascript")
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: scriptTool, Arguments: map[string]any{"n": i}})
		d := time.Since(start)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		got, _ := json.Marshal(res.StructuredContent)
		if res.IsError || string(got) != fmt.Sprintf(`{"n":%d,"ok":true}`, i) {
			return fmt.Errorf("call %d: unexpected result %s (isError %v)", i, got, res.IsError)
		}
		if i < 0 {
			continue
		}
		if !warm {
			notWarm++
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	fmt.Fprintf(out, "\nScript tool through MCP on an idle `toolhost serve --dev` (%s), go-sdk client, one call at a time, each after the JavaScript pool refilled and 20 ms of quiet; every result checked.\n\n", machine())
	fmt.Fprintln(out, "| tool | script | calls | pool not full | p50 ms | p90 ms | p99 ms | max ms | target |")
	fmt.Fprintln(out, "|---|---|--:|--:|--:|--:|--:|--:|---|")
	p50 := percentile(lat, 0.50)
	fmt.Fprintf(out, "| %s | `%s` | %d | %d | %.2f | %.2f | %.2f | %.2f | p50 ≤ %s: %s |\n", scriptTool, scriptBody, len(lat), notWarm,
		ms(p50), ms(percentile(lat, 0.90)), ms(percentile(lat, 0.99)), ms(lat[len(lat)-1]), scriptTarget, verdict(p50 <= scriptTarget))
	return nil
}
