package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
)

func executor(t *testing.T, now time.Time) *tools.Executor {
	t.Helper()
	e, err := tools.NewExecutor(tools.Options{}, NewGetTime(func() time.Time { return now }), NewRollDice(), NewRandomChoice())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(t *testing.T, e *tools.Executor, tool, args string) *tools.Outcome {
	t.Helper()
	out, err := e.Execute(context.Background(), tools.Proposal{Tool: tool, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGetTime(t *testing.T) {
	now := time.Date(2026, 7, 19, 6, 0, 0, 0, time.UTC)
	e := executor(t, now)
	tests := []struct {
		args     string
		wantTime string
		wantOff  string
		wantErr  string
	}{
		{args: `{}`, wantTime: "2026-07-19T06:00:00Z", wantOff: "+00:00"},
		{args: `{"timezone":"Asia/Shanghai"}`, wantTime: "2026-07-19T14:00:00+08:00", wantOff: "+08:00"},
		{args: `{"timezone":"America/New_York"}`, wantTime: "2026-07-19T02:00:00-04:00", wantOff: "-04:00"},
		{args: `{"timezone":"Mars/Base"}`, wantErr: `unknown time zone "Mars/Base"`},
		{args: `{"timezone":"Local"}`, wantErr: `unknown time zone "Local"`},
		{args: `{"timezone":"../../etc/passwd"}`, wantErr: `unknown time zone`},
		{args: `{"timezone":""}`, wantErr: `minLength`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			out := call(t, e, "get_time", tt.args)
			if tt.wantErr != "" {
				if !out.IsError || !strings.Contains(out.Message, tt.wantErr) {
					t.Fatalf("outcome = %+v, want error %q", out, tt.wantErr)
				}
				return
			}
			var got timeOut
			if err := json.Unmarshal(out.Structured, &got); err != nil {
				t.Fatal(err)
			}
			if got.Time != tt.wantTime || got.UTCOffset != tt.wantOff || got.Unix != now.Unix() {
				t.Fatalf("got %+v, want time %s offset %s", got, tt.wantTime, tt.wantOff)
			}
		})
	}
}

func TestRollDice(t *testing.T) {
	e := executor(t, time.Now())
	out := call(t, e, "roll_dice", `{"sides":20,"count":3}`)
	var got struct {
		Sides   int   `json:"sides"`
		Results []int `json:"results"`
		Total   int   `json:"total"`
	}
	if err := json.Unmarshal(out.Structured, &got); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range got.Results {
		if r < 1 || r > 20 {
			t.Fatalf("result %d outside 1..20", r)
		}
		sum += r
	}
	if len(got.Results) != 3 || sum != got.Total {
		t.Fatalf("got %+v", got)
	}
	// Defaults: one six-sided die. Over many rolls every face appears and
	// none outside 1..6 does.
	seen := map[int]bool{}
	for range 300 {
		out := call(t, e, "roll_dice", `{}`)
		if err := json.Unmarshal(out.Structured, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != 1 || got.Results[0] < 1 || got.Results[0] > 6 {
			t.Fatalf("default roll %+v", got)
		}
		seen[got.Results[0]] = true
	}
	if len(seen) != 6 {
		t.Fatalf("faces seen %v in 300 rolls", seen)
	}
	for _, bad := range []string{`{"sides":1}`, `{"sides":1001}`, `{"count":0}`, `{"count":101}`, `{"sides":2.5}`, `{"sides":20,"sides":6}`} {
		if out := call(t, e, "roll_dice", bad); !out.IsError {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestRandomChoice(t *testing.T) {
	e := executor(t, time.Now())
	opts := []string{"a", "b", "c"}
	seen := map[string]bool{}
	for range 200 {
		out := call(t, e, "random_choice", `{"options":["a","b","c"]}`)
		var got struct {
			Choice string `json:"choice"`
			Index  int    `json:"index"`
		}
		if err := json.Unmarshal(out.Structured, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index < 0 || got.Index > 2 || opts[got.Index] != got.Choice {
			t.Fatalf("got %+v", got)
		}
		seen[got.Choice] = true
	}
	if len(seen) != 3 {
		t.Fatalf("seen %v", seen)
	}
	for _, bad := range []string{`{}`, `{"options":[]}`, `{"options":[1]}`, `{"options":"a"}`} {
		if out := call(t, e, "random_choice", bad); !out.IsError || out.Code != tools.CodeInvalidArgs {
			t.Errorf("%s: %+v", bad, out)
		}
	}
}

// The typed outputs write the bytes of the maps they replaced.
func TestOutputsWireBytesUnchanged(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, got any
	}{
		{"roll_dice", map[string]any{"sides": 6, "results": []int{3, 5}, "total": 8}, diceRoll{Results: []int{3, 5}, Sides: 6, Total: 8}},
		{"random_choice", map[string]any{"choice": "<a> & b", "index": 1}, choice{Choice: "<a> & b", Index: 1}},
	} {
		old, _ := json.Marshal(c.old)
		got, err := json.Marshal(c.got)
		if err != nil || string(got) != string(old) {
			t.Errorf("%s: %v\n got %s\nwant %s", c.name, err, got, old)
		}
	}
}
