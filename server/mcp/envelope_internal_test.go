package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/wire"
)

// oldEnvelopes is what the guard did before the one-pass scan: the strict
// check, then json.Unmarshal. envelopes must read every body the same.
func oldEnvelopes(body []byte) ([]envelope, error) {
	if err := wire.CheckDepth(body, 2); err != nil {
		return nil, err
	}
	var msgs []envelope
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		_ = json.Unmarshal(body, &msgs)
		return msgs, nil
	}
	var m envelope
	_ = json.Unmarshal(body, &m)
	return []envelope{m}, nil
}

var envelopeBodies = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_time","arguments":{"tz":"UTC"}}}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"id":null,"method":"ping"}`,
	`{"ID":3,"Method":"tools/call","PARAMS":{"NAME":"x"}}`,
	`{"method":"initialize","Method":"tools/call","params":{"name":"n"}}`,
	`{"method":"tools/call","METHOD":5,"params":{"name":"n"}}`,
	`{"method":"tools/call","method2":"x","params":{"name":"n"}}`,
	`{"method":"tools/call","params":{"name":"a"},"Params":{"clientInfo":{}}}`,
	`{"method":"initialize","params":{"clientInfo":{"n":1}},"Params":null,"PARAMS":7,"pArams":{"name":"z"}}`,
	`{"method":"initialize","params":{"clientInfo":null}}`,
	`{"method":"tools/call","params":{"name":null}}`,
	`{"method":"tools/call","params":{"name":42}}`,
	`{"method":"tools/call","params":[{"name":"x"}]}`,
	`{"method":"tools/call","params":"x"}`,
	`{"method":"tools\/call","params":{"name":"x"}}`,
	`{"method":"tools/call","params":{"name":"x\u0079"}}`,
	`{"\u006dethod":"initialize","params":{"clientInfo":{}}}`,
	"{\"method\":\"tools/call\xff\",\"params\":{\"name\":\"x\"}}",
	`{"method":"tools/call","params":{"name":"` + strings.Repeat("é", 129) + `"}}`,
	`{"method":"tools/call","params":{"name":"` + strings.Repeat("x", 200) + `"}}`,
	`{"method":"tools/call","params":{"name":"a","name":"b"}}`,
	`{"method":"tools/call","method":"initialize"}`,
	`{"method":"tools/call","params":{"arguments":{"a":1,"a":2}}}`,
	`[{"id":1,"method":"initialize","params":{"clientInfo":{}}},{"id":2,"method":"tools/call","params":{"name":"x"}},5]`,
	`[]`,
	`{}`,
	`"x"`,
	`7`,
	`{"method":"tools/call"} x`,
	`{"method":"tools/call"`,
	``,
	`  {"id" : 1 , "method" : "tools/call" , "params" : { "name" : "t" } }  `,
}

func TestEnvelopesReadAsUnmarshal(t *testing.T) {
	for _, body := range envelopeBodies {
		got, gotErr := envelopes([]byte(body))
		want, wantErr := oldEnvelopes([]byte(body))
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%.60s: error %v, want %v", body, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(normalized(got), normalized(want)) {
			t.Errorf("%.60s:\n got %+v\nwant %+v", body, normalized(got), normalized(want))
		}
	}
}

// normalized turns raw fields into strings so equal bytes compare equal
// whether or not they share the body's memory, keeping the params the
// guard reads: a tools/call's name, an initialize's clientInfo.
func normalized(msgs []envelope) []string {
	var out []string
	for _, m := range msgs {
		p := ""
		switch m.Method {
		case "tools/call":
			p = string(m.Params.Name)
		case "initialize":
			p = string(m.Params.ClientInfo)
		}
		out = append(out, string(m.ID)+"|"+m.Method+"|"+p)
	}
	return out
}

func FuzzEnvelopesReadAsUnmarshal(f *testing.F) {
	for _, b := range envelopeBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := envelopes(body)
		want, wantErr := oldEnvelopes(body)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(normalized(got), normalized(want)) {
			t.Fatalf("%q: got %v %v, want %v %v", body, normalized(got), gotErr, normalized(want), wantErr)
		}
	})
}

func BenchmarkEnvelopes(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_time","arguments":{"timezone":"Europe/Berlin","format":"rfc3339"},"_meta":{"progressToken":17}}}`)
	for _, c := range []struct {
		name string
		f    func([]byte) ([]envelope, error)
	}{{"scan", envelopes}, {"check+unmarshal", oldEnvelopes}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
