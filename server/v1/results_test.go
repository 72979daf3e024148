package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// numbered answers n characters of numbered words: any slice of it says
// where it came from.
type numbered struct{}

func (numbered) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "numbered", Version: "1.0.0",
		Title:       catalog.Text{ZH: "编号文本", EN: "Numbered text"},
		Description: catalog.Text{ZH: "测试工具", EN: "test tool"},
		Input:       json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`),
		SideEffect:  catalog.SideEffectNone,
	}
}

func numberedText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "w%07d ", i)
	}
	return b.String()[:n]
}

func (numbered) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct{ N int }
	if err := json.Unmarshal(inv.Args, &in); err != nil {
		return nil, err
	}
	return &tools.Result{Text: numberedText(in.N), Untrusted: true}, nil
}

// A hosted call whose result is over the cap: the model gets the cut and
// the note, read_result is offered from the next round although the
// request did not declare it, the model calls it with the arguments the
// note gave, and gets the rest.
func TestHostedLoopOffersReadResultForACutResult(t *testing.T) {
	ex, err := tools.NewExecutor(tools.Options{MaxResultBytes: 64 << 10}, append(builtin.All(), numbered{})...)
	if err != nil {
		t.Fatal(err)
	}
	e := serveAccountLoop(t, ex, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_big", "numbered", `{"n":80000}`)}},
		{ToolCalls: []fakeupstream.ToolCall{{ID: "call_rest", Name: "read_result", ArgumentsFrom: `read_result[^{]*(\{[^}]*\})`}}},
		{Content: "read it all"},
	}}}})
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"read"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["numbered"],"require_approval":"never"}]}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	reqs := e.upstreamRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests, want 3", len(reqs))
	}
	offered := func(r map[string]any) []string {
		var names []string
		for _, f := range r["tools"].([]any) {
			names = append(names, f.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		return names
	}
	if got := offered(reqs[0]); strings.Join(got, ",") != "numbered" {
		t.Fatalf("round 0 offered %v", got)
	}
	if got := offered(reqs[1]); strings.Join(got, ",") != "numbered,read_result" {
		t.Fatalf("round 1 offered %v, want read_result too", got)
	}
	lastTool := func(r map[string]any) string {
		msgs := r["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)["content"].(string)
	}
	whole := numberedText(80000)
	cut := lastTool(reqs[1])
	m := regexp.MustCompile(`\[已截断：显示第 0–(\d+) 个字符，共 80000 个。完整结果已保存：调用 read_result，参数 \{"execution_id":"[0-9a-f-]{36}","start_index":(\d+)\}`).FindStringSubmatch(cut)
	if m == nil || m[1] != m[2] {
		t.Fatalf("the model did not get the note: %q", cut[max(0, len(cut)-400):])
	}
	next, _ := strconv.Atoi(m[1])
	if next != 64<<10 || !strings.Contains(cut, whole[:next]) {
		t.Fatalf("the model got %d characters of the cut, not the first %d", len(cut), 64<<10)
	}
	rest := lastTool(reqs[2])
	if !strings.Contains(rest, whole[next:]) || !strings.Contains(rest, fmt.Sprintf("[第 %d–80000 个字符，共 80000 个：已到结尾。]", next)) {
		t.Fatalf("read_result did not give the model the rest: %q", rest[max(0, len(rest)-300):])
	}
}
