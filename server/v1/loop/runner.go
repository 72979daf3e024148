package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sync/errgroup"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// MaxParallel is how many hosted calls of one round run at once (seed rule 2).
const MaxParallel = 4

// Face is the journal face of hosted calls.
const Face = "hosted"

// ErrInternal marks a failure of the tool runtime itself (not of a tool):
// the round's other calls were cancelled and the request fails.
var ErrInternal = errors.New("hosted tool runtime failed")

// Executor is the pipeline hosted calls go through: *tools.Executor, the
// same one the MCP face uses (an interface so a wrapper can add to it).
type Executor interface {
	Execute(ctx context.Context, p tools.Proposal) (*tools.Outcome, error)
	Catalog() *catalog.Registry
}

// stepLimiter is implemented by executors that know a session's
// max_steps_per_generation (tools.Executor with sessions).
type stepLimiter interface {
	MaxSteps(ctx context.Context, accountID, sessionID string) (int, bool)
}

// Catalog is a set of tools a run may host: *catalog.Registry (the
// published tools) and *tools.ToolSet (one caller's, custom tools
// included) are both one.
type Catalog interface {
	Lookup(name string) (catalog.Spec, bool)
	List() []catalog.Spec
}

// hostedCataloger is implemented by executors that know a caller's own
// tools (tools.Executor: its custom, preset and character definitions).
type hostedCataloger interface {
	HostedCatalog(ctx context.Context, account, sessionID string) (*tools.ToolSet, error)
}

// Runner runs hosted-tool loops. One Runner serves every request.
type Runner struct {
	exec   Executor
	rounds RoundRecorder
	logger *slog.Logger
	tracer trace.Tracer // nil: no round spans (the no-op provider)
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Rounds receives one record per upstream call; nil records nothing.
	Rounds RoundRecorder
	Logger *slog.Logger
	// Tracer makes a span per round (telemetry.go); nil: none.
	Tracer trace.TracerProvider
}

// NewRunner returns a runner that executes hosted calls with exec.
func NewRunner(exec Executor, opts RunnerOptions) *Runner {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{exec: exec, rounds: opts.Rounds, logger: opts.Logger}
	if _, noop := opts.Tracer.(tracenoop.TracerProvider); opts.Tracer != nil && !noop {
		r.tracer = opts.Tracer.Tracer(scopeName)
	}
	return r
}

// Catalog is the registry of tools the runner can host.
func (r *Runner) Catalog() *catalog.Registry { return r.exec.Catalog() }

// Published is the catalog a caller's run may host: the executor's
// HostedCatalog when it has one, else the published tools. Run.Catalog
// takes it, so that the declaration is checked against the same set the
// run then executes from.
func (r *Runner) Published(ctx context.Context, account, sessionID string) (Catalog, error) {
	if hc, ok := r.exec.(hostedCataloger); ok {
		ts, err := hc.HostedCatalog(ctx, account, sessionID)
		if err != nil {
			return nil, fmt.Errorf("hosted tools of the caller: %w", err)
		}
		return ts, nil
	}
	return r.exec.Catalog(), nil
}

// Run is one loop run: a request, its hosted tools, the route and the caller.
type Run struct {
	Request Request
	Hosted  Hosted
	Route   *Route
	// Catalog is where Hosted.Tools are looked up (Runner.Published); nil
	// means the published tools.
	Catalog Catalog
	Lang    catalog.Lang
	Caller  Caller
	// Budgets bound the run (budget.go); the zero value bounds nothing but
	// the rounds.
	Budgets Budgets
	// Sink receives events; nil for non-streaming callers.
	Sink Sink
}

// Result is a finished run.
type Result struct {
	RunID string
	// First is the first upstream response's id/created/model.
	First Meta
	// Final is the last upstream response as the upstream sent it.
	Final *UpstreamResponse
	// Message is the final assistant message with hosted calls removed;
	// FinishReason is adjusted accordingly ("stop" when no call is left).
	Message      Message
	FinishReason string
	// HostedRemoved is true when Message lost hosted calls (so a renderer
	// must not send Final.Message.Raw verbatim).
	HostedRemoved bool
	// Rounds are the upstream calls made; ToolRounds = len(Rounds).
	Rounds []RoundResult
	Usage  Usage
	Cost   int64
	// Calls are every hosted call the model asked for, in order, skipped
	// ones included, and the calls to invented names the loop ran (failed
	// with unknown_tool).
	Calls []Call
	// Definitions are the hosted function definitions given to the model.
	Definitions []Function
	// StoppedBy is the bound that made the last call the final one (tool
	// choice none), "" when the model answered on its own.
	StoppedBy StopReason
	// ResultBytes are the bytes of tool results fed to the model.
	ResultBytes int64
	// Resumed are the calls Request.Approvals approved, run before the
	// first upstream call (also in Calls).
	Resumed []Call
}

// RoundResult is one upstream call of a run.
type RoundResult struct {
	Round    int
	Final    bool
	Response *UpstreamResponse
	Usage    Usage
	Cost     int64
	// Calls are the round's hosted calls (invented names the loop ran
	// included) in the model's order.
	Calls    []Call
	Upstream time.Duration
	Tools    time.Duration
	// ResultBytes are the bytes of the round's results fed to the model;
	// StoppedBy is set on the final round of a run a bound ended.
	ResultBytes int64
	StoppedBy   StopReason
}

// ToolRounds is the number of upstream calls the run made.
func (r *Result) ToolRounds() int { return len(r.Rounds) }

// Definitions returns the hosted tools as function definitions, in the
// order of names, with descriptions in lang (seed rule 1).
func (r *Runner) Definitions(names []string, lang catalog.Lang) ([]Function, error) {
	return DefinitionsFrom(r.exec.Catalog(), names, lang)
}

// DefinitionsFrom is Definitions with the tools looked up in cat.
func DefinitionsFrom(cat Catalog, names []string, lang catalog.Lang) ([]Function, error) {
	out := make([]Function, 0, len(names))
	for _, n := range names {
		s, ok := cat.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("hosted tool %q is not published", n)
		}
		out = append(out, Function{Name: s.Name, Description: s.Description.In(lang), Parameters: s.InputIn(lang)})
	}
	return out, nil
}

// Run runs the loop to the end. A returned error means the request failed
// (upstream error, internal error, caller gone); tool failures are results.
func (r *Runner) Run(ctx context.Context, run *Run) (*Result, error) {
	if run.Route == nil || run.Route.Upstream == nil {
		return nil, errors.New("loop: run without a route")
	}
	cat := r.catalogOf(run)
	defs, err := DefinitionsFrom(cat, run.Hosted.Tools, run.Lang)
	if err != nil {
		return nil, err
	}
	names := newCallNames(defs, run.Request.Tools)
	hosted := names.hosted
	res := &Result{RunID: "run_" + uuid.Must(uuid.NewV7()).String(), Definitions: defs}
	emit := Sink(func(Event) error { return nil })
	if run.Sink != nil {
		emit = run.Sink
	}
	req := run.Request
	st := &runState{
		msgs:   append([]Message(nil), req.Messages...),
		fns:    append(append([]Function(nil), req.Tools...), defs...),
		choice: req.ToolChoice,
		spend:  newSpending(run.Budgets, r.maxRounds(ctx, run), time.Now()),
		names:  &names,
	}
	if emit, err = r.resumeRun(ctx, run, res, st, emit); err != nil {
		return nil, err
	}
	roundSpan := trace.SpanFromContext(context.Background()) // no span: ended before the first round starts
	defer func() { roundSpan.End() }()
	for round := 0; ; round++ {
		stop := StopReason("")
		if len(hosted) > 0 {
			stop = st.spend.stop(res.Cost)
		}
		final := stop != ""
		roundSpan.End()
		ctx, span := r.startRound(ctx, run, round, final)
		roundSpan = span
		upStart := time.Now()
		resp, err := r.modelCall(ctx, run, st, round, final, emit)
		if err != nil {
			return nil, err
		}
		st.spend.modelCalls++
		if round == 0 {
			res.First = resp.Meta
		}
		if !req.Stream {
			if err := emit(Event{Kind: EventUpstreamMeta, Round: round, ID: resp.ID, Created: resp.Created, Model: resp.Model}); err != nil {
				return nil, err
			}
		}
		rr := RoundResult{Round: round, Final: final, Response: resp, Usage: resp.Usage, Upstream: time.Since(upStart), StoppedBy: stop}
		rr.Cost = run.Route.Cost(req.Model, resp.Usage)
		res.Usage = res.Usage.Add(resp.Usage)
		res.Cost += rr.Cost

		calls, hostedCalls, callerCalls, idsAdded := classify(resp, round, names)
		if len(hostedCalls) == 0 || callerCalls > 0 || final {
			// Rules 3 and 5: the loop ends; hosted calls of this round are
			// not executed, invented names go back to the caller with the
			// rest of the answer, as they would without hosted tools (the
			// stream filter sent them on as the round turned out to end).
			res.StoppedBy = stop
			return r.end(ctx, run, res, rr, hosted, onlyHosted(hostedCalls, hosted), emit)
		}
		if err := r.hostedRound(ctx, run, res, st, &rr, hostedCalls, emit); err != nil {
			return nil, err
		}
		if awaits(hostedCalls) {
			return r.pause(ctx, run, res, rr, hosted, hostedCalls, emit)
		}
		st.msgs = appendRound(st.msgs, resp.Message, calls, idsAdded, hostedCalls, run.Lang)
		for _, d := range offerFollowUps(cat, run, hosted, hostedCalls) {
			st.fns = append(st.fns, d)
			names.host(d.Name)
			res.Definitions = append(res.Definitions, d)
		}
		st.spend.rounds++
		// Rule 4: a forced choice is relaxed once hosted tools have run.
		if st.choice.Mode == ToolChoiceRequired || st.choice.Mode == ToolChoiceFunction {
			st.choice = ToolChoice{Mode: ToolChoiceAuto}
		}
		rr.Calls = hostedCalls
		res.Calls = append(res.Calls, hostedCalls...)
		res.Rounds = append(res.Rounds, rr)
		r.record(ctx, run, res, rr)
		if err := emit(Event{Kind: EventRoundEnd, Round: round, Usage: rr.Usage, Cost: rr.Cost, Calls: cloneCalls(hostedCalls)}); err != nil {
			return nil, err
		}
	}
}

// catalogOf is where the run's hosted tools are looked up.
func (r *Runner) catalogOf(run *Run) Catalog {
	if run.Catalog == nil {
		return r.exec.Catalog()
	}
	return run.Catalog
}

// runState is what a run carries from round to round.
type runState struct {
	msgs   []Message
	fns    []Function
	choice ToolChoice
	spend  *spending
	// names are the run's hosted, caller and visible names.
	names *callNames
}

// hostedRound runs a round's hosted calls (rule 2) within the budgets: the
// ones over the tool-call budget, or all once the wall clock has run out,
// are skipped; the results are counted against the byte budget.
func (r *Runner) hostedRound(ctx context.Context, run *Run, res *Result, st *runState, rr *RoundResult, hostedCalls []Call, emit Sink) error {
	ran := st.spend.admit(hostedCalls, run.Lang)
	overUses(run.Hosted.MaxUses, st.spend.uses, ran, run.Lang)
	if len(ran) > 0 {
		if err := emit(Event{Kind: EventHostedCallsProposed, Round: rr.Round, Calls: cloneCalls(ran)}); err != nil {
			return err
		}
		toolStart := time.Now()
		if err := r.execute(ctx, run, res.RunID, st.names.visible, st.spend, ran, emit); err != nil {
			return err
		}
		rr.Tools = time.Since(toolStart)
	}
	rr.ResultBytes = st.spend.feed(ran)
	res.ResultBytes += rr.ResultBytes
	if len(ran) == 0 {
		return nil
	}
	return emit(Event{Kind: EventHostedCallsDone, Round: rr.Round, Calls: cloneCalls(ran)})
}

// maxRounds is the number of hosted rounds a run may make: the request's
// max_tool_rounds, or the session's max_steps_per_generation when lower
// (then the model answers without tools).
func (r *Runner) maxRounds(ctx context.Context, run *Run) int {
	n := run.Hosted.MaxToolRounds
	if sl, ok := r.exec.(stepLimiter); ok && run.Caller.SessionID != "" {
		if steps, ok := sl.MaxSteps(ctx, run.Caller.AccountID, run.Caller.SessionID); ok && steps < n {
			n = steps
		}
	}
	return n
}

// upstreamRequest is one round's upstream call: the request's options with
// the conversation so far, the functions and the round's tool choice.
func upstreamRequest(req *Request, msgs []Message, fns []Function, tc ToolChoice) *UpstreamRequest {
	up := &UpstreamRequest{
		Model:          req.Model,
		Messages:       msgs,
		Tools:          fns,
		ToolChoice:     tc,
		Options:        req.Options,
		OptionsDialect: req.OptionsDialect,
		Stream:         req.Stream,
		Native:         req.Native,
	}
	if len(fns) == 0 {
		up.ToolChoice = ToolChoice{}
	}
	return up
}

// end finishes a run on its last round: the round's hosted calls are
// skipped, the final message loses them.
func (r *Runner) end(ctx context.Context, run *Run, res *Result, rr RoundResult, hosted map[string]bool, hostedCalls []Call, emit Sink) (*Result, error) {
	for i := range hostedCalls {
		hostedCalls[i].Status = StatusSkipped
		hostedCalls[i].Summary = budgetSummary(run.Lang, rr.StoppedBy)
	}
	rr.Calls = hostedCalls
	res.Calls = append(res.Calls, hostedCalls...)
	res.Rounds = append(res.Rounds, rr)
	res.Final = rr.Response
	res.Message, res.FinishReason, res.HostedRemoved = withoutHosted(rr.Response, hosted)
	r.record(ctx, run, res, rr)
	if err := emit(Event{Kind: EventRoundEnd, Round: rr.Round, Final: rr.Final, Usage: rr.Usage, Cost: rr.Cost, Calls: hostedCalls}); err != nil {
		return nil, err
	}
	return res, nil
}

// appendRound adds a hosted round to the conversation: the assistant
// message with every call (ids filled in) and one tool message per hosted
// result, in the model's order.
func appendRound(msgs []Message, assistant Message, calls []ToolCall, idsAdded bool, hostedCalls []Call, lang catalog.Lang) []Message {
	assistant.ToolCalls = calls
	if idsAdded {
		// The raw message lacks the ids the results refer to.
		assistant.Raw = nil
	}
	if assistant.Role == "" {
		assistant.Role = RoleAssistant
	}
	msgs = append(msgs, assistant)
	for _, c := range hostedCalls {
		switch {
		case c.Status == StatusSkipped:
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, Text: c.Summary, IsError: true})
		case c.Withheld:
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, Text: withheldNote(lang, c), IsError: true})
		default:
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, Text: c.Result, IsError: c.IsError})
		}
	}
	return msgs
}

// execute runs calls through the executor, at most MaxParallel at a time,
// filling each Call in place. An error of the runtime, or of the sink,
// cancels the others and is returned.
func (r *Runner) execute(ctx context.Context, run *Run, runID string, visible []string, spend *spending, calls []Call, emit Sink) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(MaxParallel)
	var emitMu sync.Mutex
	send := func(ev Event) error {
		emitMu.Lock()
		defer emitMu.Unlock()
		return emit(ev)
	}
	for i := range calls {
		c := &calls[i]
		// g.Go returns once the call has a slot; the call then waits for
		// its start notice, which goes out from here so that notices come
		// in the model's order.
		started := make(chan error, 1)
		g.Go(func() error {
			if err := <-started; err != nil {
				return err
			}
			if err := r.executeOne(gctx, run, runID, visible, spend, c); err != nil {
				return err
			}
			cc := *c
			return send(Event{Kind: EventHostedCallFinished, Round: c.Round, Call: &cc})
		})
		if err := gctx.Err(); err != nil {
			started <- err
			break
		}
		err := send(Event{Kind: EventHostedCallStarted, Round: c.Round, Call: &Call{Round: c.Round, Index: c.Index, ID: c.ID, Name: c.Name, Args: c.Args}})
		started <- err
		if err != nil {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return context.Cause(ctx)
}

// executeOne runs one hosted call through the executor, which looks its
// name up among the visible ones only, until the run's wall clock: a call
// still running then is cancelled, one that would start after it does not.
func (r *Runner) executeOne(ctx context.Context, run *Run, runID string, visible []string, spend *spending, c *Call) error {
	if c.Code == CodeMaxUses {
		return nil // over its tool's max uses: not run (maxuses.go)
	}
	if spend.expired() {
		overrun(run.Lang, c)
		return nil
	}
	callCtx, cancel := spend.deadlineContext(ctx)
	defer cancel()
	key := ""
	if run.Caller.IdempotencyKey != "" {
		key = run.Caller.IdempotencyKey + "/" + strconv.Itoa(c.Round) + "/" + c.ID
	}
	policy := run.Hosted.Approval.For(c.Name)
	if c.ApprovalID != "" {
		// A call the caller approved runs under that approval only.
		policy = approval.Always
	}
	out, err := r.exec.Execute(callCtx, tools.Proposal{
		Tool:   c.Name,
		Args:   run.Hosted.fixArgs(c.Name, c.Args),
		CallID: c.ID,
		Caller: tools.Caller{
			Face:      Face,
			Slot:      run.Caller.Slot,
			SessionID: run.Caller.SessionID,
			FloorID:   run.Caller.RequestID,
			PageID:    run.Caller.PageID,
			RunID:     runID,
			Round:     c.Round,
			TraceID:   run.Caller.TraceID,
			Identity:  run.Caller.Identity,
		},
		IdempotencyKey:  key,
		Lang:            run.Lang,
		Visible:         visible,
		RequireApproval: policy,
	})
	if err != nil && (ctx.Err() != nil || callCtx.Err() == nil) {
		return fmt.Errorf("%w: hosted call %s (%s): %w", ErrInternal, c.ID, c.Name, err)
	}
	if err == nil {
		fillCall(c, out, run.Lang)
	}
	if callCtx.Err() != nil && ctx.Err() == nil && (err != nil || out.IsError) {
		// The wall clock, not the caller, ended it.
		overrun(run.Lang, c)
	}
	return nil
}

// offerFollowUps are the definitions of the tools a call of the round
// points the model to and the run does not host yet: read_result when a
// call came back cut with its rest kept (tools.Outcome.Continuation: the
// cut result's note tells the model to call it); wait_job and cancel_job
// when a call went to the background (its receipt names the execution to
// wait for). From the next round on the model may call them, whether or
// not the request declared them — not when the caller has a function of
// that name (the caller's wins), nor when the run's catalog lacks it.
func offerFollowUps(cat Catalog, run *Run, hosted map[string]bool, calls []Call) []Function {
	var names []string
	if slices.ContainsFunc(calls, func(c Call) bool { return c.Continued }) {
		names = append(names, tools.ReadResultTool)
	}
	if slices.ContainsFunc(calls, func(c Call) bool { return c.Deferred }) {
		names = append(names, tools.WaitJobTool, tools.CancelJobTool)
	}
	var out []Function
	for _, name := range names {
		if hosted[name] || slices.ContainsFunc(run.Request.Tools, func(f Function) bool { return f.Name == name }) {
			continue
		}
		if defs, err := DefinitionsFrom(cat, []string{name}, run.Lang); err == nil {
			out = append(out, defs[0])
		}
	}
	return out
}

// withoutHosted returns the final message without hosted calls and the
// finish reason that goes with it.
func withoutHosted(resp *UpstreamResponse, hosted map[string]bool) (Message, string, bool) {
	m := resp.Message
	kept := make([]ToolCall, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		if !hosted[c.Name] {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(m.ToolCalls) {
		return m, resp.FinishReason, false
	}
	m.ToolCalls = kept
	finish := resp.FinishReason
	if len(kept) == 0 && (finish == FinishToolCalls || finish == "") {
		finish = FinishStop
	}
	return m, finish, true
}

func cloneCalls(cs []Call) []Call { return append([]Call(nil), cs...) }

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
