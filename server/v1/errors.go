package v1

import (
	"fmt"
	"net/http"

	"toolhost/clip"

	"toolhost/server"
)

// Machine-readable reasons of 400 answers (error.details.reason).
const (
	ReasonInvalidJSON            = "invalid_json"
	ReasonInvalidRequest         = "invalid_request"
	ReasonServerToolUnsupported  = "server_tool_unsupported"
	ReasonHostedDisabled         = "hosted_tools_disabled"
	ReasonUnknownExtensionKey    = "unknown_extension_key"
	ReasonInvalidExtension       = "invalid_extension"
	ReasonInvalidMaxToolRounds   = "invalid_max_tool_rounds"
	ReasonRoundsWithoutHosted    = "max_tool_rounds_without_hosted_tools"
	ReasonToolNameConflict       = "tool_name_conflict"
	ReasonToolChoiceNotEnabled   = "tool_choice_not_enabled"
	ReasonUnknownHostedTool      = "unknown_hosted_tool"
	ReasonNoHostedToolEnabled    = "no_hosted_tool_enabled"
	ReasonApprovalUnsupported    = "require_approval_unsupported"
	ReasonMultipleChoices        = "n_unsupported_with_hosted_tools"
	ReasonIdempotencyKeyReused   = "idempotency_key_reused"
	ReasonIdempotencyKeyInFlight = "idempotency_key_in_progress"
)

// requestError is a refusal of the request with an HTTP status.
type requestError struct {
	status  int
	code    string
	reason  string
	param   string
	message string
	extra   map[string]any
}

func (e *requestError) Error() string { return e.reason + ": " + e.message }

func badRequest(reason, param, message string) *requestError {
	return &requestError{status: http.StatusBadRequest, code: reason, reason: reason, param: param, message: message}
}

// body is the OpenAI-style error body with our details:
// {"error":{"message","type","param","code","details":{"reason",...}}}.
func (e *requestError) body() map[string]any {
	typ := "invalid_request_error"
	switch {
	case e.status == http.StatusServiceUnavailable:
		typ = "service_unavailable_error"
	case e.status >= 500:
		typ = "server_error"
	}
	details := map[string]any{"reason": e.reason}
	for k, v := range e.extra {
		details[k] = clipValue(v)
	}
	var param any
	if e.param != "" {
		param = clip.Echo(e.param)
	}
	return map[string]any{"error": map[string]any{
		"message": clip.Message(e.message),
		"type":    typ,
		"param":   param,
		"code":    e.code,
		"details": details,
	}}
}

// maxEchoedItems bounds a list of names an error quotes.
const maxEchoedItems = 20

// clipValue bounds a detail that quotes the request: strings to
// clip.EchoRunes, lists to maxEchoedItems of those.
func clipValue(v any) any {
	switch v := v.(type) {
	case string:
		return clip.Echo(v)
	case []string:
		out := make([]string, 0, min(len(v), maxEchoedItems+1))
		for i, s := range v {
			if i == maxEchoedItems {
				out = append(out, fmt.Sprintf("…and %d more", len(v)-i))
				break
			}
			out = append(out, clip.Echo(s))
		}
		return out
	}
	return v
}

func writeRequestError(w http.ResponseWriter, e *requestError) {
	server.WriteJSON(w, e.status, e.body())
}
