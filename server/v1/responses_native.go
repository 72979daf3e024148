package v1

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// A /v1/responses request over a route whose protocol is "responses"
// (server/v1/upstream/responses) keeps what a Responses provider takes
// natively:
//
//   - the request's members the face does not consume (include, store,
//     reasoning, prompt_cache_key, client_metadata, text, truncation,
//     max_output_tokens, ...) go to the provider as they came, in place of
//     their Chat Completions translation;
//   - the built-in tools the provider runs itself (web_search, file_search,
//     code_interpreter, image_generation, computer use, local_shell) are
//     forwarded rather than served by toolhost or refused, and their
//     output items come back untouched;
//   - reasoning items (encrypted_content, summaries) and the built-in
//     tools' items of the input ride on the conversation as native items,
//     and those of every round's output are returned to the caller as the
//     provider wrote them, before the round's message (whole, or streamed
//     as output_item.added and done when the provider finished them).
//
// The round's text is the face's own message item, as on the other
// routes, so the stream and the JSON response agree; the url_citation
// annotations the provider put on its text are carried over, their
// indices moved to the round's whole text.
//
// The caller's functions, custom and namespace tools still go through the
// canonical functions (responses_tooltypes.go), so the loop runs the hosted
// tools and maps the caller's calls back. The request is native when the
// routes serve may pick for the model (with tool calling and without) all
// speak the Responses API; when they differ, it takes the canonical path,
// so a built-in tool is never forwarded to a route that would drop it.

// nativeConsumed are the members the face reads itself or that the
// canonical request carries.
var nativeConsumed = []string{"model", "input", "instructions", "tools", "tool_choice", "stream"}

// providerTools are the Responses tool types a Responses provider runs.
var providerTools = map[string]bool{
	"file_search": true, "code_interpreter": true, "image_generation": true, "computer": true,
	"computer_use_preview": true, "local_shell": true,
}

// providerItems are the input item types with no canonical form that a
// Responses provider reads back (reasoning and web_search_call are read on
// every route and left out of the others).
var providerItems = map[string]bool{
	"file_search_call": true, "code_interpreter_call": true, "image_generation_call": true,
	"computer_call": true, "computer_call_output": true, "local_shell_call": true,
	"local_shell_call_output": true, "item_reference": true, "compaction": true,
}

// nativeRoute reports whether model goes to a Responses provider whatever
// the request declares.
func (h *Handler) nativeRoute(model string) bool {
	if h.opts.Router == nil {
		return false
	}
	native := false
	for _, tools := range []bool{true, false} {
		rt, err := h.opts.Router.Pick(model, tools)
		if err != nil {
			continue
		}
		if rt.Protocol != loop.DialectResponses {
			return false
		}
		native = true
	}
	return native
}

// nativeRequest is the caller's members for a Responses provider: all but
// those the face consumes and the extension field.
func (h *Handler) nativeRequest(top map[string]json.RawMessage) *loop.Native {
	n := &loop.Native{Dialect: loop.DialectResponses, Fields: map[string]json.RawMessage{}}
	for k, v := range top {
		if k != h.opts.Label && !slices.Contains(nativeConsumed, k) {
			n.Fields[k] = v
		}
	}
	return n
}

// providerTool forwards a built-in tool to a Responses provider; false when
// the route is no Responses one or the provider does not run the type.
func (rr *responsesRequest) providerTool(typ string, item json.RawMessage) bool {
	if rr.loop.Native == nil || !(providerTools[typ] || isWebSearchTool(typ)) {
		return false
	}
	rr.loop.Native.Tools = append(rr.loop.Native.Tools, item)
	return true
}

// keepNative keeps an input item with no Chat Completions form for a
// Responses upstream: reasoning and web_search_call on every route (the
// others leave them out; a web search's findings are in the text that
// followed it), the other built-in tools' items on a Responses route. It
// says whether it kept the item.
func (b *inputBuilder) keepNative(typ string, item json.RawMessage) bool {
	if typ == "reasoning" || typ == "web_search_call" || (b.nativeRoute && providerItems[typ]) {
		b.nativeItem(item)
		return true
	}
	return false
}

// nativeItem keeps an input item with no canonical form for the assistant
// turn it belongs to (the next one rebuilt).
func (b *inputBuilder) nativeItem(item json.RawMessage) {
	if len(b.results) > 0 {
		b.flush()
	}
	b.native = append(b.native, item)
}

// messageText is what the face reads of a provider's message item.
type messageText struct {
	Content []struct {
		Text        string            `json:"text"`
		Refusal     string            `json:"refusal"`
		Annotations []json.RawMessage `json:"annotations"`
	} `json:"content"`
}

// itemCitations are the url_citation annotations of a provider's message
// item, shifted by offset characters; the item's text length comes with
// them.
func itemCitations(item json.RawMessage, offset int) ([]urlCitation, int) {
	var m messageText
	if json.Unmarshal(item, &m) != nil {
		return nil, 0
	}
	var out []urlCitation
	n := 0
	for _, c := range m.Content {
		for _, raw := range c.Annotations {
			var a urlCitation
			if json.Unmarshal(raw, &a) == nil && a.Type == "url_citation" {
				a.StartIndex += offset + n
				a.EndIndex += offset + n
				out = append(out, a)
			}
		}
		n += utf8.RuneCountInString(c.Text) + utf8.RuneCountInString(c.Refusal)
	}
	return out, n
}

// providerCitations are the url_citation annotations of the message items
// of a provider's round output (raw), indexed in the round's whole text.
func providerCitations(raw json.RawMessage) []urlCitation {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []urlCitation
	offset := 0
	for _, it := range items {
		var h struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(it, &h) != nil || h.Type != "message" {
			continue
		}
		notes, n := itemCitations(it, offset)
		out = append(out, notes...)
		offset += n
	}
	return out
}

// nativeItemEvent streams an item of a Responses provider's round that has
// no canonical form (loop.EventDeltaExtra {"item": ITEM}): added and done
// as the provider finished it, after the open message item closes.
func (s *responsesStream) nativeItemEvent(ev loop.Event) error {
	if ev.Dialect != loop.DialectResponses {
		return nil
	}
	if msg, ok := ev.Extra["message"]; ok && s.msgIndex >= 0 {
		// The message's text has streamed into the open item: its
		// annotations go on it when it closes.
		_, n := itemCitations(msg, 0)
		notes, _ := itemCitations(msg, utf8.RuneCountInString(s.msgText.String())-n)
		s.provided = append(s.provided, notes...)
		return nil
	}
	item, ok := ev.Extra["item"]
	if !ok {
		return nil
	}
	if err := s.closeMessage("completed"); err != nil {
		return err
	}
	i := s.add(item)
	added := at(i, "")
	added.Item = item
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	return s.itemDone(i, item)
}
