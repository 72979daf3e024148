package loop

import (
	"context"
	"encoding/json"
	"fmt"
)

// Upstream is a model API client. Call makes one model call. When
// req.Stream is true it reports deltas to onDelta as they arrive (an error
// from onDelta aborts the call with that error); either way it returns the
// assembled response.
type Upstream interface {
	Call(ctx context.Context, req *UpstreamRequest, onDelta func(Delta) error) (*UpstreamResponse, error)
}

// TokenCounter is an upstream that can count the input tokens of a request
// itself (the Anthropic count_tokens endpoint).
type TokenCounter interface {
	CountTokens(ctx context.Context, req *UpstreamRequest) (int64, error)
}

// UpstreamRequest is one model call in canonical form.
type UpstreamRequest struct {
	Model          string
	Messages       []Message
	Tools          []Function
	ToolChoice     ToolChoice
	Options        map[string]json.RawMessage
	OptionsDialect Dialect
	Stream         bool
	// Native: the caller's fields and tools for an upstream of its
	// dialect (Request.Native).
	Native *Native
}

// Delta is one streamed piece of an upstream response.
type Delta struct {
	// Meta is set on the first delta of a stream.
	Meta *Meta
	Text string
	// Tool is set for a piece of a tool call.
	Tool *ToolDelta
	// Extra holds the delta's other non-null fields in Dialect
	// (reasoning_content, refusal, ...), for renderers of the same dialect.
	Extra   map[string]json.RawMessage
	Dialect Dialect
}

// Meta identifies an upstream response.
type Meta struct {
	ID      string
	Created int64
	Model   string
}

// ToolDelta is a piece of the tool call at Index (the upstream's index).
// ID and Name come with the first piece; Args pieces follow.
type ToolDelta struct {
	Index int
	ID    string
	Name  string
	Args  string
}

// Finish reasons in canonical (OpenAI) spelling.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// UpstreamResponse is one complete model answer.
type UpstreamResponse struct {
	Meta
	// Message is the assistant message (Raw in Dialect).
	Message      Message
	FinishReason string
	Usage        Usage
	Dialect      Dialect
	// Extra holds the response's other top-level fields (system_fingerprint,
	// service_tier, ...) and ChoiceExtra the choice's (logprobs), verbatim.
	Extra       map[string]json.RawMessage
	ChoiceExtra map[string]json.RawMessage
}

// UpstreamError is an HTTP error answer from the upstream. A 4xx usually
// means the caller's own fields were refused; server/v1 relays it.
type UpstreamError struct {
	Route   string
	Status  int
	Body    []byte
	Dialect Dialect
}

func (e *UpstreamError) Error() string {
	b := e.Body
	if len(b) > 300 {
		b = b[:300]
	}
	return fmt.Sprintf("upstream %s answered %d: %s", e.Route, e.Status, b)
}

// modelCall is a round's call of the model: the request's tool choice,
// none in the final round (under the final round's own deadline).
func (r *Runner) modelCall(ctx context.Context, run *Run, st *runState, round int, final bool, emit Sink) (*UpstreamResponse, error) {
	tc := st.choice
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if final {
		tc = ToolChoice{Mode: ToolChoiceNone}
		callCtx, cancel = st.spend.finalContext(ctx)
	}
	defer cancel()
	if err := emit(Event{Kind: EventRoundStart, Round: round, Final: final}); err != nil {
		return nil, err
	}
	filter := newStreamFilter(round, final, *st.names, emit)
	return run.Route.Upstream.Call(callCtx, upstreamRequest(&run.Request, st.msgs, st.fns, tc), filter.delta)
}
