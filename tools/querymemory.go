package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools/session"
)

// query_memory: the seed names it among the builtins that need a session
// and says nothing more. A session's memory here is its variables (what
// set_variable wrote), and query_memory searches them by words: a
// variable matches when every word of the query occurs, ignoring case, in
// its name or in the text of its value (object keys, strings, numbers,
// booleans; not JSON punctuation). No stemming and no Unicode
// normalization beyond case: "Café" finds "café", not "cafe".

// Limits of query_memory.
const (
	// memoryPage is how many variables one store read returns.
	memoryPage = 200
	// memoryValueInline is the largest value a match carries whole; a
	// larger one is read with get_variable.
	memoryValueInline = 1 << 10
	// memorySnippetRunes bounds the text around the first hit.
	memorySnippetRunes = 160
	// memoryMaxTerms bounds the words of a query.
	memoryMaxTerms = 16
)

type queryMemory struct{ e *Executor }

func (*queryMemory) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "query_memory", Version: "1.0.0",
		Title: catalog.Text{ZH: "查询会话记忆", EN: "Query session memory"},
		Description: catalog.Text{
			ZH: "在当前会话的记忆（set_variable 写入的变量）中查找 query：query 的每个词都要（不区分大小写）出现在变量名或变量值的文本里。最相关的在前（变量名命中优先，其次最近更新），每条附一段摘录；值不超过 1 KiB 时一并返回，更大的用 get_variable 读取。",
			EN: "Searches the current session's memory (the variables set_variable wrote) for query: every word of query must occur, ignoring case, in a variable's name or in the text of its value. Best matches first (name hits first, then the most recently updated), each with a snippet, and the value itself when it is at most 1 KiB; read a larger one with get_variable.",
		},
		Input: json.RawMessage(`{"type": "object", "properties": {
			"query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "words to look for, separated by spaces"},
			"limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "most matches to return"}},
			"required": ["query"], "additionalProperties": false}`),
		InputZH:     catalog.SchemaZH{"/properties/query": "要查找的词，用空格分隔", "/properties/limit": "最多返回的匹配数"},
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
		SideEffect:  catalog.SideEffectNone, ReplaySafe: true,
	}
}

// memoryMatch is one variable query_memory found.
// memoryResult is query_memory's output. The fields of the outputs of
// this package's tools are declared in sorted order of their names: the
// bytes the maps they replaced gave.
type memoryResult struct {
	Matches []memoryMatch `json:"matches"`
	Query   string        `json:"query"`
	Scanned int           `json:"scanned"`
	Total   int           `json:"total"`
}

type memoryMatch struct {
	Name       string          `json:"name"`
	Score      int             `json:"score"`
	UpdatedAt  int64           `json:"updated_at"`
	Snippet    string          `json:"snippet"`
	ValueBytes int             `json:"value_bytes"`
	Value      json.RawMessage `json:"value,omitempty"`
}

func (t *queryMemory) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	account, sid, err := t.e.sessionOf(inv)
	if err != nil {
		return nil, err
	}
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	terms := memoryTerms(in.Query)
	if len(terms) == 0 {
		return nil, Errorf(CodeInvalidArgs, "query_memory: query has no words; give at least one")
	}
	if len(terms) > memoryMaxTerms {
		return nil, Errorf(CodeInvalidArgs, "query_memory: query has %d different words; at most %d are allowed", len(terms), memoryMaxTerms)
	}
	var matches []memoryMatch
	scanned := 0
	for after := ""; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		page, err := t.e.opts.Variables.ListVariables(ctx, account, sid, after, memoryPage)
		if err != nil {
			return nil, fmt.Errorf("query_memory: %w", err)
		}
		for _, v := range page {
			scanned++
			if m, ok := matchVariable(v, terms); ok {
				matches = append(matches, m)
			}
		}
		if len(page) < memoryPage {
			break
		}
		after = page[len(page)-1].Name
	}
	slices.SortFunc(matches, func(a, b memoryMatch) int {
		switch {
		case a.Score != b.Score:
			return b.Score - a.Score
		case a.UpdatedAt != b.UpdatedAt:
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	total := len(matches)
	if in.Limit <= 0 {
		in.Limit = 10
	}
	if len(matches) > in.Limit {
		matches = matches[:in.Limit]
	}
	if matches == nil {
		matches = []memoryMatch{}
	}
	var text strings.Builder
	fmt.Fprintf(&text, "%d of %d variables match %q", total, scanned, in.Query)
	for _, m := range matches {
		fmt.Fprintf(&text, "\n%s: %s", m.Name, m.Snippet)
	}
	return &Result{
		Structured: memoryResult{Matches: matches, Query: in.Query, Scanned: scanned, Total: total},
		Text:       text.String(), Summary: fmt.Sprintf("memory: %d matches", total),
	}, nil
}

// memoryTerms are the distinct lower-case words of a query.
func memoryTerms(q string) []string {
	var out []string
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// matchVariable scores a variable: 10 for each word in its name, plus
// its occurrences in the value's text (at most 5 a word). Every word must
// occur somewhere.
func matchVariable(v session.Variable, terms []string) (memoryMatch, bool) {
	name := strings.ToLower(v.Name)
	pieces := valueText(v.Value)
	lower := make([]string, len(pieces))
	for i, p := range pieces {
		lower[i] = strings.ToLower(p)
	}
	score := 0
	for _, t := range terms {
		n := 0
		for _, p := range lower {
			if n += strings.Count(p, t); n >= 5 {
				n = 5
				break
			}
		}
		if strings.Contains(name, t) {
			n += 10
		}
		if n == 0 {
			return memoryMatch{}, false
		}
		score += n
	}
	m := memoryMatch{Name: v.Name, Score: score, UpdatedAt: v.UpdatedAt.UnixMilli(), ValueBytes: len(v.Value), Snippet: snippet(pieces, lower, terms)}
	if len(v.Value) <= memoryValueInline {
		m.Value = v.Value
	}
	return m, true
}

// valueText is the text of a JSON value: keys, strings, numbers and
// booleans, in document order.
func valueText(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch v := tok.(type) {
		case string:
			out = append(out, v)
		case json.Number:
			out = append(out, v.String())
		case bool:
			out = append(out, fmt.Sprint(v))
		}
	}
}

// snippet is the text around the first word found in the value (the
// start of the value when only the name matched), at most
// memorySnippetRunes runes. strings.ToLower maps rune to rune, so a rune
// offset in the lower-case text is one in the original.
func snippet(pieces, lower, terms []string) string {
	for i, p := range lower {
		for _, t := range terms {
			at := strings.Index(p, t)
			if at < 0 {
				continue
			}
			r := []rune(pieces[i])
			start := max(utf8.RuneCountInString(p[:at])-memorySnippetRunes/4, 0)
			end := min(start+memorySnippetRunes, len(r))
			return clipped(r, start, end)
		}
	}
	r := []rune(strings.Join(pieces, " "))
	return clipped(r, 0, min(memorySnippetRunes, len(r)))
}

func clipped(r []rune, start, end int) string {
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s
}
