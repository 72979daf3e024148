package v1

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
)

// The blocks of a hosted call serving a Messages server tool, in the shapes
// of the Anthropic SDK's ServerToolUseBlock, WebSearchToolResultBlock,
// WebFetchToolResultBlock, CodeExecutionToolResultBlock and
// BashCodeExecutionToolResultBlock, and the text's
// CitationsWebSearchResultLocation.
type (
	directCaller struct {
		Type string `json:"type"`
	}
	serverToolUseBlock struct {
		Caller directCaller    `json:"caller"`
		ID     string          `json:"id"`
		Input  json.RawMessage `json:"input"`
		Name   string          `json:"name"`
		Type   string          `json:"type"`
	}
	serverResultBlock struct {
		Caller    *directCaller `json:"caller,omitempty"`
		Content   any           `json:"content"`
		ToolUseID string        `json:"tool_use_id"`
		Type      string        `json:"type"`
	}
	serverToolError struct {
		ErrorCode string `json:"error_code"`
		Type      string `json:"type"`
	}
	webSearchResultBlock struct {
		EncryptedContent string  `json:"encrypted_content"`
		PageAge          *string `json:"page_age"`
		Title            string  `json:"title"`
		Type             string  `json:"type"`
		URL              string  `json:"url"`
	}
	webFetchResult struct {
		Content     documentBlock `json:"content"`
		RetrievedAt *string       `json:"retrieved_at"`
		Type        string        `json:"type"`
		URL         string        `json:"url"`
	}
	documentBlock struct {
		Citations json.RawMessage `json:"citations"`
		Source    plainTextSource `json:"source"`
		Title     *string         `json:"title"`
		Type      string          `json:"type"`
	}
	plainTextSource struct {
		Data      string `json:"data"`
		MediaType string `json:"media_type"`
		Type      string `json:"type"`
	}
	codeExecutionResult struct {
		Content    []struct{} `json:"content"`
		ReturnCode int        `json:"return_code"`
		Stderr     string     `json:"stderr"`
		Stdout     string     `json:"stdout"`
		Type       string     `json:"type"`
	}
	webSearchCitation struct {
		CitedText      string `json:"cited_text"`
		EncryptedIndex string `json:"encrypted_index"`
		Title          string `json:"title"`
		Type           string `json:"type"`
		URL            string `json:"url"`
	}
	citedTextBlock struct {
		Citations []webSearchCitation `json:"citations"`
		Text      string              `json:"text"`
		Type      string              `json:"type"`
	}
)

// serverUseID is the server_tool_use id of a hosted call: the API's prefix
// before the upstream's call id.
func serverUseID(callID string) string { return "srvtoolu_" + callID }

// serverToolUse is the server_tool_use block of a call (input {} when
// streaming, which sends the input as a delta).
func serverToolUse(t serverTool, c loop.Call, input json.RawMessage) json.RawMessage {
	b, _ := marshal(serverToolUseBlock{Type: "server_tool_use", ID: serverUseID(c.ID), Name: t.useName(), Input: input, Caller: directCaller{Type: "direct"}})
	return b
}

// foundItem is a web search result as web_search's structured content
// holds it.
type foundItem struct {
	PublishedAt string `json:"published_at,omitempty"`
	Snippet     string `json:"snippet"`
	Title       string `json:"title"`
	URL         string `json:"url"`
}

// foundItems are the results of a finished web_search call.
func foundItems(c loop.Call) []foundItem {
	var out struct {
		Results []foundItem `json:"results"`
	}
	if c.IsError || json.Unmarshal(c.Structured, &out) != nil {
		return nil
	}
	return out.Results
}

// serverResult is the result block of a finished call serving t.
func serverResult(t serverTool, c loop.Call) json.RawMessage {
	blk := serverResultBlock{ToolUseID: serverUseID(c.ID), Type: t.name + "_tool_result"}
	failed := c.IsError || c.Status == loop.StatusFailed
	switch t.name {
	case "web_search":
		blk.Caller = &directCaller{Type: "direct"}
		if failed {
			blk.Content = serverToolError{Type: "web_search_tool_result_error", ErrorCode: serverErrorCode(t, c.Code)}
			break
		}
		list := []webSearchResultBlock{}
		for _, r := range foundItems(c) {
			enc, _ := marshal(r)
			item := webSearchResultBlock{Type: "web_search_result", URL: r.URL, Title: r.Title, EncryptedContent: base64.StdEncoding.EncodeToString(enc)}
			if r.PublishedAt != "" {
				item.PageAge = ref(r.PublishedAt)
			}
			list = append(list, item)
		}
		blk.Content = list
	case "web_fetch":
		blk.Caller = &directCaller{Type: "direct"}
		if failed {
			blk.Content = serverToolError{Type: "web_fetch_tool_result_error", ErrorCode: serverErrorCode(t, c.Code)}
			break
		}
		blk.Content = fetchResult(c)
	default:
		prefix := ""
		if t.bash() {
			prefix = "bash_"
			blk.Type = "bash_code_execution_tool_result"
		}
		var out struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			TimedOut bool   `json:"timed_out"`
		}
		if failed || json.Unmarshal(c.Structured, &out) != nil || out.TimedOut {
			code := serverErrorCode(t, c.Code)
			if out.TimedOut {
				code = "execution_time_exceeded"
			}
			blk.Content = serverToolError{Type: prefix + "code_execution_tool_result_error", ErrorCode: code}
			break
		}
		blk.Content = codeExecutionResult{Type: prefix + "code_execution_result", Stdout: out.Stdout, Stderr: out.Stderr, ReturnCode: out.ExitCode, Content: []struct{}{}}
	}
	b, _ := marshal(blk)
	return b
}

// fetchResult is the web_fetch_result of a page fetch_page read.
func fetchResult(c loop.Call) webFetchResult {
	var page struct {
		URL       string `json:"url"`
		FinalURL  string `json:"final_url"`
		Title     string `json:"title"`
		Content   string `json:"content"`
		FetchedAt string `json:"fetched_at"`
	}
	_ = json.Unmarshal(c.Structured, &page) // done calls always have it
	r := webFetchResult{Type: "web_fetch_result", URL: page.URL, Content: documentBlock{
		Type: "document", Citations: json.RawMessage("null"),
		Source: plainTextSource{Type: "text", MediaType: "text/plain", Data: page.Content},
	}}
	if page.Title != "" {
		r.Content.Title = ref(page.Title)
	}
	if page.FetchedAt != "" {
		r.RetrievedAt = ref(page.FetchedAt)
	}
	return r
}

// serverErrorCode is the API's error code for a failed call of t, from the
// hosted tool's machine code.
func serverErrorCode(t serverTool, code string) string {
	switch {
	case code == loop.CodeMaxUses:
		if t.name == "code_execution" {
			return "too_many_requests" // the code execution errors have no max_uses_exceeded
		}
		return loop.CodeMaxUses
	case code == "query_too_long" && t.name == "web_search", code == "url_too_long" && t.name == "web_fetch":
		return code
	case strings.HasPrefix(code, "invalid"):
		return "invalid_tool_input"
	case code == "rate_limited" || code == "limit_exceeded":
		return "too_many_requests"
	case code == "timeout" && t.name == "code_execution":
		return "execution_time_exceeded"
	case code == "unsupported_content_type" && t.name == "web_fetch":
		return code
	case strings.HasSuffix(code, "_not_allowed") || code == "robots_disallowed":
		if t.name == "web_fetch" {
			return "url_not_allowed"
		}
	}
	if t.name == "web_fetch" {
		return "url_not_accessible"
	}
	return "unavailable"
}

// maxCitedText is the most characters of a result a citation quotes (the
// API's cited_text holds up to 150).
const maxCitedText = 150

// citeBlocks gives the text blocks that link to a web search result the
// web_search_result_location citations of those links.
func citeBlocks(blocks []json.RawMessage, found []foundItem) []json.RawMessage {
	if len(found) == 0 {
		return blocks
	}
	results := make([]searchResult, 0, len(found))
	byURL := map[string]foundItem{}
	for _, f := range found {
		results = append(results, searchResult{Title: f.Title, URL: f.URL})
		if _, ok := byURL[f.URL]; !ok {
			byURL[f.URL] = f
		}
	}
	out := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		var tb textBlock
		if json.Unmarshal(b, &tb) != nil || tb.Type != "text" {
			out = append(out, b)
			continue
		}
		cs := citations(tb.Text, results)
		if len(cs) == 0 {
			out = append(out, b)
			continue
		}
		cited := citedTextBlock{Type: "text", Text: tb.Text}
		for _, c := range cs {
			f := byURL[c.URL]
			quote := f.Snippet
			if utf8.RuneCountInString(quote) > maxCitedText {
				quote = string([]rune(quote)[:maxCitedText])
			}
			idx, _ := marshal(f)
			cited.Citations = append(cited.Citations, webSearchCitation{
				Type: "web_search_result_location", URL: c.URL, Title: c.Title, CitedText: quote,
				EncryptedIndex: base64.StdEncoding.EncodeToString(idx),
			})
		}
		nb, _ := marshal(cited)
		out = append(out, nb)
	}
	return out
}

// found are the web search results of the calls serving web_search
// among calls.
func (s serverTools) found(calls []loop.Call) []foundItem {
	var out []foundItem
	for _, c := range calls {
		if t, ok := s.serves(c.Name); ok && t.name == "web_search" {
			out = append(out, foundItems(c)...)
		}
	}
	return out
}

// hostedOf is the hosted tool a server_tool_use name stands for.
func hostedOf(useName string) (string, bool) {
	switch useName {
	case "web_search":
		return searchToolName, true
	case "web_fetch":
		return openToolName, true
	case "code_execution", "bash_code_execution":
		return "run_code", true
	}
	return "", false
}

// isServerBlock says whether a content block type is a server tool's.
func isServerBlock(typ string) bool {
	switch typ {
	case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result":
		return true
	}
	return false
}

// continuedServerUse is a server_tool_use block sent back as the tool_use
// the model made of the hosted tool.
func continuedServerUse(b json.RawMessage, param string) (json.RawMessage, error) {
	var u struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "server_tool_use: "+err.Error())
	}
	name, ok := hostedOf(u.Name)
	if !ok {
		return nil, badRequest(ReasonServerToolUnsupported, param+".name", "server tool "+quote(u.Name)+" cannot be continued on this route; web_search, web_fetch and code_execution can")
	}
	return marshal(toolUseBlock{Type: "tool_use", ID: u.ID, Name: name, Input: objectOrEmpty(u.Input)})
}

// continuedServerResult is a server tool's result block sent back as the
// tool_result the model read: what came from outside (results, pages,
// program output) fenced as it was the first time.
func continuedServerResult(b json.RawMessage, param string) (json.RawMessage, error) {
	var r struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, r.Type+": "+err.Error())
	}
	var errObj serverToolError
	if json.Unmarshal(r.Content, &errObj) == nil && errObj.ErrorCode != "" {
		return marshal(toolResultBlock{Type: "tool_result", ToolUseID: r.ToolUseID, IsError: true, Content: stringJSON(errObj.ErrorCode)})
	}
	var text string
	switch r.Type {
	case "web_search_tool_result":
		var list []webSearchResultBlock
		if err := json.Unmarshal(r.Content, &list); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param+".content", "web_search_tool_result content must be a list of results or an error")
		}
		items := make([]foundItem, 0, len(list))
		for _, it := range list {
			f := foundItem{Title: it.Title, URL: it.URL}
			if raw, err := base64.StdEncoding.DecodeString(it.EncryptedContent); err == nil {
				var was foundItem
				if json.Unmarshal(raw, &was) == nil && was.URL == it.URL {
					f = was
				}
			}
			items = append(items, f)
		}
		enc, _ := marshal(struct {
			Results []foundItem `json:"results"`
		}{items})
		text = string(enc)
	case "web_fetch_tool_result":
		var page webFetchResult
		if err := json.Unmarshal(r.Content, &page); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param+".content", "web_fetch_tool_result content must be a web_fetch_result or an error")
		}
		text = page.URL + "\n\n" + page.Content.Source.Data
	default:
		var out codeExecutionResult
		if err := json.Unmarshal(r.Content, &out); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param+".content", r.Type+" content must be a result or an error")
		}
		enc, _ := marshal(struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}{out.ReturnCode, out.Stdout, out.Stderr})
		text = string(enc)
	}
	return marshal(toolResultBlock{Type: "tool_result", ToolUseID: r.ToolUseID, Content: stringJSON(tools.Fence(text))})
}

// stringJSON is s as a JSON string.
func stringJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func quote(s string) string { return string(stringJSON(s)) }
