package tools

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
)

// A result over Options.MaxResultBytes reaches the caller cut, never
// passed off as whole (§6.10): the outcome says Truncated, the text ends
// with a note naming the execution, the next start_index, read_result and
// the MCP resource, and Continuation carries the same for clients. The
// whole result is kept in the journal (journal.FullResult, up to
// MaxStoredResultBytes) for read_result to page through.

// Parts of a result read_result pages through: the text rendering (for a
// result with only structured content, its JSON) or the structured
// content's JSON.
const (
	PartText       = "text"
	PartStructured = "structured"
)

// ReadResultTool is the name of the builtin that pages through a kept
// result (readresult.go).
const ReadResultTool = "read_result"

// ResultURITemplate is the MCP resource template of a kept result's pages.
const ResultURITemplate = "toolhost://executions/{id}/result{?part,start_index,max_length}"

// ResultURI is the resource URI of the page of execution id's result that
// starts at character start of part.
func ResultURI(id, part string, start int) string {
	q := url.Values{}
	if part != "" && part != PartText {
		q.Set("part", part)
	}
	if start > 0 {
		q.Set("start_index", strconv.Itoa(start))
	}
	u := "toolhost://executions/" + id + "/result"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// Continuation says how to read the rest of a cut result: with the tool
// Tool (arguments execution_id, part, start_index) or the MCP resource
// Resource. Indexes and lengths count characters (Unicode code points).
type Continuation struct {
	ExecutionID    string `json:"execution_id"`
	Part           string `json:"part"`
	NextStartIndex int    `json:"next_start_index"`
	TotalLength    int    `json:"total_length"`
	Tool           string `json:"tool"`
	Resource       string `json:"resource"`
}

// keepTimeout bounds the write of a kept result.
const keepTimeout = 30 * time.Second

// resultCut is what encode cuts of one result.
type resultCut struct {
	// textCut is the byte offset the text is cut at; -1 when it fits.
	textCut int
	// structuredCut says the structured content is over the cap;
	// structured is its cut, nil when no cut fits or matches the output
	// schema.
	structuredCut bool
	structured    []byte
	// kept says the whole result is in the journal.
	kept bool
}

func (c *resultCut) any() bool { return c.textCut >= 0 || c.structuredCut }

// cutResult decides the cuts of a result whose structured content
// encodes as full and whose text is text.
func (e *Executor) cutResult(spec catalog.Spec, full []byte, text string) resultCut {
	c := resultCut{textCut: -1}
	limit := e.opts.MaxResultBytes
	if len(text) > limit {
		cut := limit
		for cut > 0 && cut > limit-utf8.UTFMax && !utf8.RuneStart(text[cut]) {
			cut--
		}
		c.textCut = cut
	}
	if len(full) > limit {
		c.structuredCut = true
		if b, ok := cutJSON(full, limit); ok && matchesOutput(spec, b) {
			c.structured = b
		}
	}
	return c
}

// matchesOutput checks a cut structured result against the tool's output
// schema, when it has one. Compiled here, not cached: cuts are rare.
func matchesOutput(spec catalog.Spec, b []byte) bool {
	if len(spec.Output) == 0 {
		return true
	}
	sch, err := compileSchema(spec.Name+".output", spec.Output)
	if err != nil {
		return false
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return false
	}
	return sch.Validate(v) == nil
}

// keepResult writes the whole result to the journal; false when the store
// refused it (logged: the caller then gets the cut without a way to the
// rest, and a note that says so).
func (e *Executor) keepResult(ctx context.Context, id string, inv *Invocation, res *Result, full []byte) bool {
	limit := e.opts.MaxStoredResultBytes
	r := journal.FullResult{
		AccountID: e.Account(inv.Caller), ExecutionID: id, Untrusted: res.Untrusted, CreatedAt: e.opts.Clock(),
		Text: storedPrefix([]byte(res.Text), limit), TextBytes: int64(len(res.Text)),
		Structured: storedPrefix(full, limit), StructuredBytes: int64(len(full)),
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := e.journal.PutResult(ctx, r); err != nil {
		e.opts.Logger.ErrorContext(ctx, "keeping a cut result failed", "tool", inv.Spec.Name, "execution_id", id, "err", err)
		return false
	}
	return true
}

// storedPrefix is b as kept: whole up to limit bytes, else its first limit
// bytes (FullResult's sizes say it was cut).
func storedPrefix(b []byte, limit int) []byte {
	if b == nil {
		return nil
	}
	return b[:min(len(b), limit)]
}

// continuation of part (whole) cut at byte offset cut; nil when the whole
// result could not be kept.
func (c *resultCut) continuation(id, part string, cut int, whole []byte) *Continuation {
	if !c.kept {
		return nil
	}
	next := utf8.RuneCount(whole[:cut])
	return &Continuation{
		ExecutionID: id, Part: part, NextStartIndex: next, TotalLength: utf8.RuneCount(whole),
		Tool: ReadResultTool, Resource: ResultURI(id, part, next),
	}
}

// textNote ends a cut text: what it shows, and how to read the rest.
func (c *resultCut) textNote(id, text string, lang catalog.Lang) string {
	next, total := utf8.RuneCountInString(text[:c.textCut]), utf8.RuneCountInString(text)
	if !c.kept {
		if lang == catalog.English {
			return fmt.Sprintf("\n\n[truncated: characters 0–%d of %d shown; the whole result could not be kept, so ask for a smaller part of it]", next, total)
		}
		return fmt.Sprintf("\n\n[已截断：显示第 0–%d 个字符，共 %d 个；完整结果未能保存，请只请求其中较小的一部分]", next, total)
	}
	also := ""
	if c.structuredCut {
		also = ` The structured content is cut too: "part":"structured" reads it whole.`
		if lang != catalog.English {
			also = `结构化内容也被截断：用 "part":"structured" 读取其完整内容。`
		}
	}
	if lang == catalog.English {
		return fmt.Sprintf("\n\n[truncated: characters 0–%d of %d shown. The whole result is kept: call %s with {\"execution_id\":%q,\"start_index\":%d} for the rest, or read the MCP resource %s.%s]",
			next, total, ReadResultTool, id, next, ResultURI(id, PartText, next), also)
	}
	return fmt.Sprintf("\n\n[已截断：显示第 0–%d 个字符，共 %d 个。完整结果已保存：调用 %s，参数 {\"execution_id\":%q,\"start_index\":%d}，读取其余部分；或读取 MCP 资源 %s。%s]",
		next, total, ReadResultTool, id, next, ResultURI(id, PartText, next), also)
}

// structuredNote ends the whole text of a result whose structured content
// alone was cut.
func (c *resultCut) structuredNote(id string, full []byte, lang catalog.Lang) string {
	total := utf8.RuneCount(full)
	if !c.kept {
		if lang == catalog.English {
			return fmt.Sprintf("\n\n[the structured content (%d characters) is truncated to fit; the whole of it could not be kept]", total)
		}
		return fmt.Sprintf("\n\n[结构化内容（共 %d 个字符）已截断；其完整内容未能保存]", total)
	}
	if lang == catalog.English {
		return fmt.Sprintf("\n\n[the structured content (%d characters) is truncated to fit: long strings shortened, arrays cut short. Read the whole of it with %s {\"execution_id\":%q,\"part\":\"structured\"}, or the MCP resource %s.]",
			total, ReadResultTool, id, ResultURI(id, PartStructured, 0))
	}
	return fmt.Sprintf("\n\n[结构化内容（共 %d 个字符）已截断：长字符串被缩短、数组被截短。用 %s {\"execution_id\":%q,\"part\":\"structured\"} 或 MCP 资源 %s 读取完整内容。]",
		total, ReadResultTool, id, ResultURI(id, PartStructured, 0))
}

// tooLargeMessage is the message of a structured result over the cap that
// no cut fits, or whose cut its output schema refuses.
func (c *resultCut) tooLargeMessage(tool, id string, size, limit int, lang catalog.Lang) string {
	if !c.kept {
		return fmt.Sprintf("%s produced %d bytes of structured result, more than the %d allowed; ask for less (a smaller count, max_length or output)", tool, size, limit)
	}
	if lang == catalog.English {
		return fmt.Sprintf("%s produced %d bytes of structured result, more than the %d allowed, and no cut of it fits and matches its output schema. The whole result is kept: read it in pages with %s {\"execution_id\":%q,\"part\":\"structured\"}, or the MCP resource %s; or ask for less.",
			tool, size, limit, ReadResultTool, id, ResultURI(id, PartStructured, 0))
	}
	return fmt.Sprintf("%s 产生了 %d 字节的结构化结果，超过允许的 %d 字节，且无法截成既符合大小又符合其输出 schema 的结果。完整结果已保存：用 %s {\"execution_id\":%q,\"part\":\"structured\"} 或 MCP 资源 %s 分段读取；或请求更少的内容。",
		tool, size, limit, ReadResultTool, id, ResultURI(id, PartStructured, 0))
}
