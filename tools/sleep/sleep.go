// Package sleep provides the test-only `sleep` tool: it waits, reports
// progress at each step and says how many sleep calls were in flight when it
// started. Tests and load runs use it for slow calls, cancellation, crash
// recovery and concurrency limits. It is published only when the server runs
// with --test-tools.
package sleep

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// Tool is the sleep tool. One value counts its own calls in flight.
type Tool struct {
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	// effect marks the sleep_effect variant: the same wait, declared with
	// sandbox side effects so tests can exercise the journal's branch for
	// calls that may have changed something (crash → uncertain).
	effect bool
}

// New returns a sleep tool with its own in-flight counter.
func New() *Tool { return &Tool{} }

// NewEffect returns the test-only sleep_effect tool: sleep declared with
// side-effect level sandbox.
func NewEffect() *Tool { return &Tool{effect: true} }

// MaxInFlight is the most calls that were running at once since start.
func (t *Tool) MaxInFlight() int64 { return t.maxSeen.Load() }

func (t *Tool) Spec() catalog.Spec {
	s := t.spec()
	if t.effect {
		s.Name = "sleep_effect"
		s.Title = catalog.Text{ZH: "等待（测试用，沙箱副作用）", EN: "Sleep with side effects (testing)"}
		s.Description = catalog.Text{
			ZH: "测试用：与 sleep 相同，但声明为沙箱副作用级别，用于测试崩溃后的 uncertain 处理。",
			EN: "For testing: the same as sleep, declared with sandbox side effects to test how crashes leave such calls uncertain.",
		}
		s.Annotations = catalog.Annotations{}
		s.SideEffect = catalog.SideEffectSandbox
		s.ReplaySafe = false
	}
	return s
}

func (*Tool) spec() catalog.Spec {
	return catalog.Spec{
		Name:    "sleep",
		Version: "1.0.0",
		// Deferred when asked: tests of background jobs use it.
		Async: catalog.DeferredOK,
		Title: catalog.Text{ZH: "等待（测试用）", EN: "Sleep (testing)"},
		Description: catalog.Text{
			ZH: "测试用：等待 ms 毫秒，分 steps 步报告进度，返回开始时正在运行的 sleep 调用数。",
			EN: "For testing: waits ms milliseconds in steps, reporting progress at each step, and returns how many sleep calls were running when it started.",
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "ms": {"type": "integer", "minimum": 0, "maximum": 600000, "default": 100},
    "steps": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1}
  },
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "slept_ms": {"type": "integer"},
    "in_flight": {"type": "integer", "description": "sleep calls running when this one started, itself included"},
    "started_unix_us": {"type": "integer", "description": "wall-clock start, for measuring overlap across processes"},
    "ended_unix_us": {"type": "integer"}
  },
  "required": ["slept_ms", "in_flight", "started_unix_us", "ended_unix_us"],
  "additionalProperties": false
}`),
		OutputZH: catalog.SchemaZH{
			"/properties/in_flight":       "这次调用开始时正在运行的 sleep 调用数，包括它自己",
			"/properties/started_unix_us": "开始时的挂钟时间，用于测量跨进程的重叠",
		},
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
		SideEffect:  catalog.SideEffectNone,
		ReplaySafe:  true,
	}
}

func (t *Tool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct {
		MS    int `json:"ms"`
		Steps int `json:"steps"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	n := t.inFlight.Add(1)
	defer t.inFlight.Add(-1)
	for {
		m := t.maxSeen.Load()
		if n <= m || t.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	start := time.Now()
	step := time.Duration(in.MS) * time.Millisecond / time.Duration(in.Steps)
	timer := time.NewTimer(step)
	defer timer.Stop()
	for i := 1; i <= in.Steps; i++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		inv.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
		timer.Reset(step)
	}
	end := time.Now()
	ms := end.Sub(start).Milliseconds()
	return &tools.Result{
		Structured: slept{EndedUnixUS: end.UnixMicro(), InFlight: n, SleptMS: ms, StartedUnixUS: start.UnixMicro()},
		Text:       fmt.Sprintf("slept %d ms (%d sleep calls in flight at start)", ms, n),
		Summary:    fmt.Sprintf("slept %d ms", ms),
	}, nil
}

// slept is a sleep tool's output, its fields in sorted order of their
// names: the bytes the map it replaced gave.
type slept struct {
	EndedUnixUS   int64 `json:"ended_unix_us"`
	InFlight      int64 `json:"in_flight"`
	SleptMS       int64 `json:"slept_ms"`
	StartedUnixUS int64 `json:"started_unix_us"`
}
