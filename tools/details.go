package tools

import (
	"encoding/json"
	"strconv"
)

// The details of the state events the pipeline records. They are structs,
// not maps, because every call encodes five or more of them on its hot
// path: encoding/json sorts a map's keys and boxes each value, which cost
// a fifth of a fast call's pipeline time. The fields are declared in
// alphabetical order of their JSON names, the order a map had, so the
// stored events read the same as before.

type proposedDetail struct {
	ArgsBytes int    `json:"args_bytes"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
}

type parsedDetail struct {
	Bytes  int    `json:"bytes"`
	Parser string `json:"parser"`
}

type validatedDetail struct {
	ArgsDigest      string `json:"args_digest"`
	Dialect         string `json:"dialect"`
	FormatAssertion bool   `json:"format_assertion"`
	ReferenceClock  string `json:"reference_clock"`
	TimeZone        string `json:"time_zone"`
	Validator       string `json:"validator"`
}

type authorizedDetail struct {
	AccountID string   `json:"account_id"`
	KeyID     string   `json:"key_id"`
	Scopes    []string `json:"scopes"`
}

type preparedDetail struct {
	ArgsDigest      string `json:"args_digest"`
	SideEffectLevel string `json:"side_effect_level"`
}

// confirmedDetail is the prepared event of a call that runs under its
// user's approval.
type confirmedDetail struct {
	ArgsDigest      string              `json:"args_digest"`
	Confirmation    *confirmationDetail `json:"confirmation"`
	SideEffectLevel string              `json:"side_effect_level"`
}

type executingDetail struct {
	Attempt   int    `json:"attempt"`
	Deadline  string `json:"deadline"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type observedDetail struct {
	ResultBytes int    `json:"result_bytes"`
	Status      Status `json:"status"`
	Truncated   bool   `json:"truncated"`
}

// endDetail is how a call that did not succeed ended.
type endDetail struct {
	Code   string `json:"code"`
	Status Status `json:"status"`
}

type rejectedDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type deduplicatedDetail struct {
	IdempotencyKey string `json:"idempotency_key"`
	ReplayOf       string `json:"replay_of"`
}

// The details on every call's path are written by hand, not by
// json.Marshal (reflection and its encoder cache, per detail, seven
// details per call). The bytes are json.Marshal's
// (TestDetailsEncodeAsMarshal).

func (d proposedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 48+len(d.CallID)+len(d.Tool))}
	w.int("args_bytes", int64(d.ArgsBytes))
	w.str("call_id", d.CallID)
	w.str("tool", d.Tool)
	return w.end()
}

func (d parsedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 48+len(d.Parser))}
	w.int("bytes", int64(d.Bytes))
	w.str("parser", d.Parser)
	return w.end()
}

func (d validatedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 128+len(d.ArgsDigest)+len(d.Dialect)+len(d.ReferenceClock)+len(d.TimeZone)+len(d.Validator))}
	w.str("args_digest", d.ArgsDigest)
	w.str("dialect", d.Dialect)
	w.bool("format_assertion", d.FormatAssertion)
	w.str("reference_clock", d.ReferenceClock)
	w.str("time_zone", d.TimeZone)
	w.str("validator", d.Validator)
	return w.end()
}

func (d authorizedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 64+len(d.AccountID)+len(d.KeyID)+24*len(d.Scopes))}
	w.str("account_id", d.AccountID)
	w.str("key_id", d.KeyID)
	w.strs("scopes", d.Scopes)
	return w.end()
}

func (d preparedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 48+len(d.ArgsDigest)+len(d.SideEffectLevel))}
	w.str("args_digest", d.ArgsDigest)
	w.str("side_effect_level", d.SideEffectLevel)
	return w.end()
}

func (d executingDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 64+len(d.Deadline))}
	w.int("attempt", int64(d.Attempt))
	w.str("deadline", d.Deadline)
	w.int("timeout_ms", d.TimeoutMS)
	return w.end()
}

func (d observedDetail) raw() json.RawMessage {
	w := detailWriter{make([]byte, 0, 64+len(d.Status))}
	w.int("result_bytes", int64(d.ResultBytes))
	w.str("status", string(d.Status))
	w.bool("truncated", d.Truncated)
	return w.end()
}

// detailWriter appends an object's members; keys are written as given.
type detailWriter struct{ b []byte }

func (w *detailWriter) key(k string) {
	if len(w.b) == 0 {
		w.b = append(w.b, '{')
	} else {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *detailWriter) int(k string, n int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, n, 10)
}

func (w *detailWriter) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *detailWriter) str(k, s string) {
	w.key(k)
	w.quote(s)
}

func (w *detailWriter) strs(k string, ss []string) {
	w.key(k)
	if ss == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.quote(s)
	}
	w.b = append(w.b, ']')
}

// quote writes s as json.Marshal does: as it is when it is printable ASCII
// needing no escape (json.Marshal also escapes <, > and &), through
// json.Marshal otherwise.
func (w *detailWriter) quote(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			w.b = append(w.b, q...)
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

func (w *detailWriter) end() json.RawMessage { return append(w.b, '}') }
