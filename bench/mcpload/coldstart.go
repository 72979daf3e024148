package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cold-start mode (-coldstart) measures a new process the way Claude
// Desktop and the command line meet it:
//
//   - stdio: `toolhost stdio` launched by the go-sdk client's command
//     transport; the time from starting the process to the result of the
//     first run_code print(1) (initialize, tools/call). The first launch
//     has an empty data folder, so CPython compiles (no disk cache) and the
//     row counts the progress notifications it got; the next launches reuse
//     the folder and its compiled cache, as every start after the first
//     does.
//   - call: `toolhost call roll_dice '{}'` with a fresh --data every time,
//     from fork to exit.

type coldRow struct {
	name     string
	lat      []time.Duration // sorted
	progress int             // notifications during the first, uncached call
	longest  time.Duration   // longest silence during it
}

func runColdStart(ctx context.Context, cfg config, launches int, out io.Writer) error {
	runtimes, err := filepath.Abs(cfg.runtimes)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(cfg.toolhost)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpload-cold-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")

	var rows []coldRow
	first := coldRow{name: "stdio, first start: no compiled cache"}
	cached := coldRow{name: "stdio, compiled cache present"}
	for i := 0; i <= launches; i++ {
		var n atomic.Int64
		var last atomic.Int64 // ns since start of the last notification
		var longest atomic.Int64
		start := time.Now()
		client := mcp.NewClient(&mcp.Implementation{Name: "mcpload-cold", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				now := int64(time.Since(start))
				if gap := now - last.Swap(now); gap > longest.Load() {
					longest.Store(gap)
				}
				n.Add(1)
			},
		})
		cmd := exec.CommandContext(ctx, bin, "stdio", "--data", data, "--runtimes", runtimes)
		cmd.Dir = tmp // not the checkout: found through --runtimes, as a client would configure it
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			return fmt.Errorf("stdio launch %d: %w", i, err)
		}
		p := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": "print(1)"}}
		p.SetProgressToken("cold")
		res, err := cs.CallTool(cctx, p)
		el := time.Since(start)
		_ = cs.Close()
		cancel()
		if err != nil {
			return fmt.Errorf("stdio launch %d: %w", i, err)
		}
		if err := checkRuncode(res, runcodeCases[1]); err != nil {
			return fmt.Errorf("stdio launch %d: %w", i, err)
		}
		if i == 0 {
			first.lat = []time.Duration{el}
			first.progress = int(n.Load())
			first.longest = max(time.Duration(longest.Load()), el-time.Duration(last.Load()))
		} else {
			cached.lat = append(cached.lat, el)
		}
		fmt.Fprintf(os.Stderr, "mcpload: stdio launch %d: first print(1) after %s, %d progress notifications\n", i, el, n.Load())
	}
	slices.Sort(cached.lat)
	rows = append(rows, first, cached)

	call := coldRow{name: "`toolhost call roll_dice '{}'`, fresh --data each time"}
	for i := range launches {
		d := filepath.Join(tmp, fmt.Sprintf("call-%d", i))
		start := time.Now()
		b, err := exec.CommandContext(ctx, bin, "call", "--data", d, "--runtimes", runtimes, "roll_dice", "{}").CombinedOutput()
		el := time.Since(start)
		if err != nil {
			return fmt.Errorf("toolhost call: %w\n%s", err, b)
		}
		call.lat = append(call.lat, el)
	}
	slices.Sort(call.lat)
	rows = append(rows, call)

	fmt.Fprintf(out, "Machine: %s. %d launches per cached row; the go-sdk client's command transport for stdio.\n\n", machine(), launches)
	fmt.Fprintln(out, "| start | launches | p50 ms | max ms | progress notifications | longest silence s | target |")
	fmt.Fprintln(out, "|---|--:|--:|--:|--:|--:|---|")
	for i, r := range rows {
		p50 := percentile(r.lat, 0.5)
		goal, notes, silence := "", "", ""
		switch i {
		case 0:
			notes, silence = fmt.Sprint(r.progress), fmt.Sprintf("%.2f", r.longest.Seconds())
			goal = "progress at least every second: " + verdict(r.longest <= 1500*time.Millisecond)
		case 1:
			goal = "≤ 500 ms: " + verdict(p50 <= 500*time.Millisecond)
		case 2:
			goal = "≤ 300 ms: " + verdict(p50 <= 300*time.Millisecond)
		}
		fmt.Fprintf(out, "| %s | %d | %.0f | %.0f | %s | %s | %s |\n", r.name, len(r.lat), ms(p50), ms(r.lat[len(r.lat)-1]), notes, silence, goal)
	}
	return nil
}
