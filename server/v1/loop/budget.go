package loop

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/catalog"
)

// Budgets bound one run (tool-call-semantics §6.11): how many upstream
// calls, hosted calls, how long, how many result bytes fed to the model and
// how much quota. Zero leaves a bound off. When one is spent the loop does
// what rule 5 does after max_tool_rounds: one last call with tool choice
// none, and Result.StoppedBy names the budget.
type Budgets struct {
	// ModelCalls counts upstream calls, the final one included: with N the
	// N-th call is the final one (1: the model answers without tools).
	ModelCalls int
	// ToolCalls counts hosted calls run (invented names included). A round
	// asking for more than are left runs the first ones in the model's order
	// and skips the rest.
	ToolCalls int
	// ResultBytes counts the bytes of tool results fed to the model. A
	// result that would take the total over it is withheld (the model gets
	// a note naming its execution instead), as is every later result of the
	// round; then the loop stops.
	ResultBytes int64
	// WallClock is the run's deadline, from its start on the runtime's
	// clock: hosted calls still running then are cancelled (they fail as
	// timeout), none start after it, and the loop stops.
	WallClock time.Duration
	// Cost is the quota (cost_quota) the rounds may reach.
	Cost int64
	// FinalGrace bounds the final call once a WallClock is set: it must
	// answer within this long of its start (0: DefaultFinalGrace).
	FinalGrace time.Duration
}

// The server's budgets when its config sets none (hosted.budgets): a
// round of 40 calls or a loop of 1.5 MB of results stays far inside them,
// a runaway loop does not. Model calls and cost have no default bound:
// max_tool_rounds bounds the calls, and prices differ by deployment.
const (
	DefaultToolCallBudget    = 128
	DefaultResultBytesBudget = 4 << 20
	DefaultWallClockBudget   = 10 * time.Minute
)

// DefaultFinalGrace is how long the final call after a wall-clock budget
// may take when Budgets.FinalGrace is not set.
const DefaultFinalGrace = 30 * time.Second

// Tighter is b with each bound of o that is tighter: o's value when b has
// none or o's is lower (a zero of o leaves b's). A key's budgets are
// applied to the server's this way, so a key can only lower them.
func (b Budgets) Tighter(o Budgets) Budgets {
	b.ModelCalls = lower(b.ModelCalls, o.ModelCalls)
	b.ToolCalls = lower(b.ToolCalls, o.ToolCalls)
	b.ResultBytes = lower(b.ResultBytes, o.ResultBytes)
	b.WallClock = lower(b.WallClock, o.WallClock)
	b.Cost = lower(b.Cost, o.Cost)
	return b
}

func lower[T int | int64 | time.Duration](a, b T) T {
	if b > 0 && (a <= 0 || b < a) {
		return b
	}
	return a
}

// StopReason names what ended a run's hosted rounds (the extension field's
// stopped_by); "" when the model answered on its own.
type StopReason string

// The stop reasons, in the order they are checked before each call.
const (
	StopToolRounds  StopReason = "tool_rounds"
	StopModelCalls  StopReason = "model_calls"
	StopToolCalls   StopReason = "tool_calls"
	StopResultBytes StopReason = "result_bytes"
	StopWallClock   StopReason = "wall_clock"
	StopCost        StopReason = "cost"
)

// CodeBudgetExhausted is the code of a hosted call that did not start
// because the run's wall clock ran out (status failed: the model was told
// it would run).
const CodeBudgetExhausted = "budget_exhausted"

// spending is what a run has used of its budgets.
type spending struct {
	b          Budgets
	maxRounds  int
	deadline   time.Time // zero: no wall clock
	modelCalls int
	toolCalls  int
	fed        int64          // result bytes fed to the model
	withheld   bool           // a result was withheld: the byte budget is spent
	rounds     int            // hosted rounds run
	uses       map[string]int // calls by tool, for Hosted.MaxUses
}

func newSpending(b Budgets, maxRounds int, start time.Time) *spending {
	s := &spending{b: b, maxRounds: maxRounds, uses: map[string]int{}}
	if b.WallClock > 0 {
		s.deadline = start.Add(b.WallClock)
	}
	return s
}

// stop is the budget that makes the next call the final one, or "".
func (s *spending) stop(cost int64) StopReason {
	switch {
	case s.rounds >= s.maxRounds:
		return StopToolRounds
	case s.b.ModelCalls > 0 && s.modelCalls+1 >= s.b.ModelCalls:
		return StopModelCalls
	case s.b.ToolCalls > 0 && s.toolCalls >= s.b.ToolCalls:
		return StopToolCalls
	case s.withheld || (s.b.ResultBytes > 0 && s.fed >= s.b.ResultBytes):
		return StopResultBytes
	case s.expired():
		return StopWallClock
	case s.b.Cost > 0 && cost >= s.b.Cost:
		return StopCost
	}
	return ""
}

func (s *spending) expired() bool {
	return !s.deadline.IsZero() && !time.Now().Before(s.deadline)
}

// finalContext bounds the final call by the grace once a wall clock is set.
func (s *spending) finalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.deadline.IsZero() {
		return ctx, func() {}
	}
	grace := s.b.FinalGrace
	if grace <= 0 {
		grace = DefaultFinalGrace
	}
	return context.WithTimeout(ctx, grace)
}

// admit splits a round's hosted calls into the ones that run (a prefix, in
// the model's order) and the ones skipped for a budget, marked in place.
func (s *spending) admit(calls []Call, lang catalog.Lang) []Call {
	n := len(calls)
	reason := StopReason("")
	if s.expired() {
		n, reason = 0, StopWallClock
	} else if s.b.ToolCalls > 0 && s.toolCalls+n > s.b.ToolCalls {
		n, reason = s.b.ToolCalls-s.toolCalls, StopToolCalls
	}
	for i := n; i < len(calls); i++ {
		calls[i].Status = StatusSkipped
		calls[i].Summary = budgetSummary(lang, reason)
	}
	s.toolCalls += n
	return calls[:n]
}

// feed counts the round's results fed to the model and withholds those
// that do not fit in the byte budget (every one after the first that does
// not); it returns the round's bytes.
func (s *spending) feed(calls []Call) int64 {
	var n int64
	for i := range calls {
		c := &calls[i]
		if c.Status == StatusSkipped {
			continue
		}
		size := int64(len(c.Result))
		if s.withheld || (s.b.ResultBytes > 0 && s.fed+size > s.b.ResultBytes) {
			s.withheld, c.Withheld = true, true
			continue
		}
		s.fed += size
		n += size
	}
	return n
}

// deadlineContext is ctx ending at the wall clock, for hosted calls.
func (s *spending) deadlineContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, s.deadline)
}

// budgetSummary is a skipped call's summary for a budget (the rounds' is
// skippedSummary's).
func budgetSummary(lang catalog.Lang, reason StopReason) string {
	en := lang == catalog.English
	switch reason {
	case StopToolRounds:
		return skippedSummary(lang, true)
	case StopToolCalls:
		if en {
			return "not run: the request's tool-call budget is spent"
		}
		return "未执行：本次请求的工具调用预算已用完"
	case StopWallClock:
		if en {
			return "not run: the request's wall-clock budget is spent"
		}
		return "未执行：本次请求的时间预算已用完"
	case StopResultBytes:
		if en {
			return "not run: the request's tool-result budget is spent"
		}
		return "未执行：本次请求的工具结果字节预算已用完"
	case StopModelCalls:
		if en {
			return "not run: the request's model-call budget is spent"
		}
		return "未执行：本次请求的模型调用预算已用完"
	case StopCost:
		if en {
			return "not run: the request's cost budget is spent"
		}
		return "未执行：本次请求的费用预算已用完"
	}
	return skippedSummary(lang, false)
}

// withheldNote is what the model reads instead of a result withheld for
// the byte budget.
func withheldNote(lang catalog.Lang, c Call) string {
	if lang == catalog.English {
		return "result withheld: the request's tool-result budget is spent (execution " + c.ExecutionID + ")"
	}
	return "结果未提供：本次请求的工具结果字节预算已用完（执行 " + c.ExecutionID + "）"
}

// overrun is the text of a call cancelled or refused at the wall clock.
func overrun(lang catalog.Lang, c *Call) {
	c.Status, c.IsError, c.Structured = StatusFailed, true, nil
	if c.Code == "" {
		c.Code = CodeBudgetExhausted
	}
	if lang == catalog.English {
		c.Summary = c.Name + " failed: the request's wall-clock budget ran out"
		c.Result = c.Code + ": " + c.Name + " did not finish before the request's wall-clock budget ran out"
		return
	}
	c.Summary = c.Name + " 失败：本次请求的时间预算已用完"
	c.Result = c.Code + ": " + c.Name + " 在本次请求的时间预算用完前未完成"
}
