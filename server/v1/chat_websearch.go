package v1

import (
	"encoding/json"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// Chat Completions' web_search_options (the search models' built-in web
// search) is served by the hosted web_search and fetch_page for any model
// of the route: the option is not sent upstream, the searches run in the
// loop like any hosted call (in the extension field's tool_calls), and the
// answer carries url_citation annotations where its text writes the URL of
// a result (responses_websearch.go).

// webSearchOptions reads web_search_options: an object whose members
// (search_context_size, user_location) are accepted and not used.
func (cr *chatRequest) webSearchOptions(raw json.RawMessage, enabled map[string]bool) error {
	if !present(raw) {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return badRequest(ReasonInvalidRequest, "web_search_options", "web_search_options must be an object")
	}
	delete(cr.loop.Options, "web_search_options")
	if err := cr.declareWebSearch(cr.h, "web_search_options", nil, nil); err != nil {
		return err
	}
	cr.enableWebSearch(enabled)
	return nil
}

// chatCitation is a url_citation annotation of a Chat Completions message.
type (
	chatCitation struct {
		Type        string           `json:"type"`
		URLCitation chatCitationSpan `json:"url_citation"`
	}
	chatCitationSpan struct {
		EndIndex   int    `json:"end_index"`
		StartIndex int    `json:"start_index"`
		Title      string `json:"title"`
		URL        string `json:"url"`
	}
)

// chatCitations are the annotations of a run's final text (nil without a
// web search; an empty list when nothing is cited).
func (cr *chatRequest) chatCitations(res *loop.Result) []chatCitation {
	if cr.search == nil {
		return nil
	}
	out := []chatCitation{}
	for _, c := range citations(res.Message.Text, cr.foundResults(res)) {
		out = append(out, chatCitation{Type: "url_citation", URLCitation: chatCitationSpan{EndIndex: c.EndIndex, StartIndex: c.StartIndex, Title: c.Title, URL: c.URL}})
	}
	return out
}

// withAnnotations is message (a JSON object) with its annotations set.
func withAnnotations(message json.RawMessage, notes []chatCitation) json.RawMessage {
	if notes == nil {
		return message
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(message, &m) != nil {
		return message
	}
	m["annotations"], _ = marshal(notes)
	b, err := marshal(m)
	if err != nil {
		return message
	}
	return b
}
