package anthropic

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// Anthropic stop reasons in canonical (OpenAI) spelling; the raw
// stop_reason stays in loop.UpstreamResponse.Extra.
func finishFromStopReason(s string) string {
	switch s {
	case "tool_use":
		return loop.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return loop.FinishLength
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return loop.FinishStop
	}
}

// StopReason is the Messages stop_reason for a canonical finish reason.
func StopReason(finish string) string {
	switch finish {
	case loop.FinishToolCalls:
		return "tool_use"
	case loop.FinishLength:
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}

func decodeResponse(b []byte) (*loop.UpstreamResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	out := &loop.UpstreamResponse{Dialect: loop.DialectAnthropic, Extra: map[string]json.RawMessage{}, Meta: loop.Meta{Created: time.Now().Unix()}}
	content := json.RawMessage(`[]`)
	for k, v := range top {
		var err error
		switch k {
		case "id":
			err = json.Unmarshal(v, &out.ID)
		case "model":
			err = json.Unmarshal(v, &out.Model)
		case "content":
			content = v
		case "usage":
			out.Usage, err = decodeUsage(v)
		case "type", "role":
		default:
			out.Extra[k] = v
		}
		if err != nil {
			return nil, fmt.Errorf("response field %s: %w", k, err)
		}
	}
	var stop string
	if err := field(out.Extra, "stop_reason", &stop); err != nil {
		return nil, fmt.Errorf("response %w", err)
	}
	out.FinishReason = finishFromStopReason(stop)
	raw, err := upstream.Marshal(map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`), "content": content})
	if err != nil {
		return nil, err
	}
	msgs, err := DecodeMessage(raw)
	if err != nil {
		return nil, err
	}
	out.Message = msgs[0]
	return out, nil
}

func decodeUsage(raw json.RawMessage) (loop.Usage, error) {
	d, err := loop.DecodeUsageDetail(raw)
	if err != nil || d == nil {
		return loop.Usage{}, err
	}
	return anthropicUsage(d), nil
}

// anthropicUsage: input_tokens excludes cache reads and writes; the
// canonical InputTokens counts all input, as prompt_tokens does.
func anthropicUsage(d loop.UsageDetail) loop.Usage {
	read := d.Number("cache_read_input_tokens")
	write := d.Number("cache_creation_input_tokens")
	return loop.Usage{Dialect: loop.DialectAnthropic, Detail: d, Present: true,
		InputTokens:       d.Number("input_tokens") + read + write,
		OutputTokens:      d.Number("output_tokens"),
		CachedInputTokens: read,
	}
}
