package v1

import (
	"fmt"
	"net/http"

	"github.com/toolhost/toolhost/internal/clip"

	"github.com/toolhost/toolhost/server"
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
	// names and keys are the request's names the refusal is about
	// (details.names, details.keys).
	names []string
	keys  []string
}

func (e *requestError) Error() string { return e.reason + ": " + e.message }

func badRequest(reason, param, message string) *requestError {
	return &requestError{status: http.StatusBadRequest, code: reason, reason: reason, param: param, message: message}
}

// errorBody is the OpenAI-style error body with our details:
// {"error":{"message","type","param","code","details":{"reason",...}}}.
type errorBody struct {
	Error errorObject `json:"error"`
}

// errorObject is the error of every format (Messages sets its own type).
// Fields of the wire structs here are in the alphabetical order of their
// names: the bytes are those a map gave, which the golden files pin.
type errorObject struct {
	Code    string       `json:"code"`
	Details errorDetails `json:"details"`
	Message string       `json:"message"`
	Param   *string      `json:"param"`
	Type    string       `json:"type"`
}

type errorDetails struct {
	Keys   []string `json:"keys,omitempty"`
	Names  []string `json:"names,omitempty"`
	Reason string   `json:"reason"`
}

func (e *requestError) body() errorBody {
	typ := "invalid_request_error"
	switch {
	case e.status == http.StatusServiceUnavailable:
		typ = "service_unavailable_error"
	case e.status >= 500:
		typ = "server_error"
	}
	var param *string
	if e.param != "" {
		p := clip.Echo(e.param)
		param = &p
	}
	return errorBody{Error: errorObject{
		Code:    e.code,
		Details: errorDetails{Reason: e.reason, Names: clipNames(e.names), Keys: clipNames(e.keys)},
		Message: clip.Message(e.message),
		Param:   param,
		Type:    typ,
	}}
}

// maxEchoedItems bounds a list of names an error quotes.
const maxEchoedItems = 20

// clipNames bounds names that quote the request: each to clip.EchoRunes,
// the list to maxEchoedItems of them.
func clipNames(v []string) []string {
	if v == nil {
		return nil
	}
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

func writeRequestError(w http.ResponseWriter, e *requestError) {
	server.WriteJSON(w, e.status, e.body())
}
