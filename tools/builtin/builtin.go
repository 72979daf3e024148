package builtin

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// All returns the builtin tools in the order they are published.
func All() []tools.Tool {
	return []tools.Tool{NewGetTime(time.Now), NewRollDice(), NewRandomChoice()}
}

var readOnly = catalog.Annotations{ReadOnly: true, Idempotent: false, OpenWorld: false}

// GetTime reports the current time in a time zone.
type GetTime struct {
	now func() time.Time
	// zones caches loaded locations by name: time.LoadLocation reads and
	// parses the zone file on every call. Only names that loaded are kept,
	// so the cache is bounded by the IANA database (about 600 names).
	zones sync.Map // string → *time.Location
}

// NewGetTime returns get_time reading the clock now.
func NewGetTime(now func() time.Time) *GetTime { return &GetTime{now: now} }

func (g *GetTime) location(name string) (*time.Location, error) {
	if loc, ok := g.zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	g.zones.Store(name, loc)
	return loc, nil
}

func (*GetTime) Spec() catalog.Spec {
	return catalog.Spec{
		Name:    "get_time",
		Version: "1.0.0",
		Title:   catalog.Text{ZH: "当前时间", EN: "Current time"},
		Description: catalog.Text{
			ZH: "返回指定时区（IANA 名称，如 Asia/Shanghai，默认 UTC）的当前时间：ISO-8601 时间、Unix 秒、时区名和 UTC 偏移。",
			EN: "Returns the current time in a time zone (IANA name such as Europe/Paris, default UTC): ISO-8601 time, Unix seconds, zone name and UTC offset.",
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "timezone": {"type": "string", "minLength": 1, "maxLength": 64, "default": "UTC", "description": "IANA time zone name, e.g. Asia/Shanghai or America/New_York"}
  },
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "time": {"type": "string", "description": "ISO-8601 time with offset"},
    "unix": {"type": "integer"},
    "timezone": {"type": "string"},
    "abbreviation": {"type": "string"},
    "utc_offset": {"type": "string", "description": "+08:00 style offset"},
    "utc_offset_seconds": {"type": "integer"}
  },
  "required": ["time", "unix", "timezone", "utc_offset", "utc_offset_seconds"],
  "additionalProperties": false
}`),
		InputZH: catalog.SchemaZH{"/properties/timezone": "IANA 时区名，如 Asia/Shanghai 或 America/New_York"},
		OutputZH: catalog.SchemaZH{
			"/properties/time":       "带 UTC 偏移的 ISO-8601 时间",
			"/properties/utc_offset": "+08:00 形式的 UTC 偏移",
		},
		Annotations: readOnly,
		SideEffect:  catalog.SideEffectNone,
		ReplaySafe:  true,
	}
}

type timeOut struct {
	Time             string `json:"time"`
	Unix             int64  `json:"unix"`
	TimeZone         string `json:"timezone"`
	Abbreviation     string `json:"abbreviation"`
	UTCOffset        string `json:"utc_offset"`
	UTCOffsetSeconds int    `json:"utc_offset_seconds"`
}

func (g *GetTime) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct {
		TimeZone string `json:"timezone"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	// LoadLocation accepts "Local" and file-system paths; a model asking for
	// those would learn about the host, so only names of the IANA form pass.
	if in.TimeZone == "Local" || strings.ContainsAny(in.TimeZone, `\.`) || strings.HasPrefix(in.TimeZone, "/") {
		return nil, tools.Errorf("unknown_timezone", "unknown time zone %q: use an IANA name such as UTC, Asia/Shanghai or America/New_York", in.TimeZone)
	}
	loc, err := g.location(in.TimeZone)
	if err != nil {
		return nil, tools.Errorf("unknown_timezone", "unknown time zone %q: use an IANA name such as UTC, Asia/Shanghai or America/New_York", in.TimeZone)
	}
	t := g.now().In(loc)
	abbr, off := t.Zone()
	out := timeOut{
		Time:             t.Format(time.RFC3339),
		Unix:             t.Unix(),
		TimeZone:         loc.String(),
		Abbreviation:     abbr,
		UTCOffset:        t.Format("-07:00"),
		UTCOffsetSeconds: off,
	}
	return &tools.Result{
		Structured: out,
		Text:       fmt.Sprintf("%s (%s, UTC%s, unix %d)", out.Time, out.TimeZone, out.UTCOffset, out.Unix),
		Summary:    out.Time,
	}, nil
}

// RollDice rolls fair dice.
type RollDice struct{}

// NewRollDice returns roll_dice.
func NewRollDice() *RollDice { return &RollDice{} }

func (*RollDice) Spec() catalog.Spec {
	return catalog.Spec{
		Name:    "roll_dice",
		Version: "1.0.0",
		Title:   catalog.Text{ZH: "掷骰子", EN: "Roll dice"},
		Description: catalog.Text{
			ZH: "掷 count 个 sides 面的公平骰子（sides 2–1000，默认 6；count 1–100，默认 1），返回每次结果和总和。",
			EN: "Rolls count fair dice with sides faces each (sides 2–1000, default 6; count 1–100, default 1) and returns every result and the total.",
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "sides": {"type": "integer", "minimum": 2, "maximum": 1000, "default": 6, "description": "faces per die"},
    "count": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1, "description": "number of dice"}
  },
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "sides": {"type": "integer"},
    "results": {"type": "array", "items": {"type": "integer", "minimum": 1}},
    "total": {"type": "integer"}
  },
  "required": ["sides", "results", "total"],
  "additionalProperties": false
}`),
		InputZH:     catalog.SchemaZH{"/properties/sides": "每个骰子的面数", "/properties/count": "骰子个数"},
		Annotations: readOnly,
		SideEffect:  catalog.SideEffectNone,
		ReplaySafe:  true,
	}
}

func (*RollDice) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct {
		Sides int `json:"sides"`
		Count int `json:"count"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	results := make([]int, in.Count)
	total := 0
	parts := make([]string, in.Count)
	for i := range results {
		n, err := randIntn(in.Sides)
		if err != nil {
			return nil, err
		}
		results[i] = n + 1
		total += results[i]
		parts[i] = strconv.Itoa(results[i])
	}
	return &tools.Result{
		Structured: diceRoll{Results: results, Sides: in.Sides, Total: total},
		Text:       fmt.Sprintf("%dd%d: %s (total %d)", in.Count, in.Sides, strings.Join(parts, ", "), total),
		Summary:    fmt.Sprintf("%dd%d = %d", in.Count, in.Sides, total),
	}, nil
}

// diceRoll is roll_dice's output. The fields of the outputs here are
// declared in sorted order of their names: the bytes the maps they
// replaced gave.
type diceRoll struct {
	Results []int `json:"results"`
	Sides   int   `json:"sides"`
	Total   int   `json:"total"`
}

// RandomChoice picks one option uniformly.
type RandomChoice struct{}

// NewRandomChoice returns random_choice.
func NewRandomChoice() *RandomChoice { return &RandomChoice{} }

func (*RandomChoice) Spec() catalog.Spec {
	return catalog.Spec{
		Name:    "random_choice",
		Version: "1.0.0",
		Title:   catalog.Text{ZH: "随机选择", EN: "Random choice"},
		Description: catalog.Text{
			ZH: "从 options（1–100 个字符串）中等概率随机选出一个，返回所选项和它的下标（从 0 开始）。",
			EN: "Picks one of options (1–100 strings) uniformly at random and returns the choice and its zero-based index.",
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "options": {"type": "array", "items": {"type": "string", "maxLength": 1000}, "minItems": 1, "maxItems": 100, "description": "the options to choose from"}
  },
  "required": ["options"],
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "choice": {"type": "string"},
    "index": {"type": "integer", "minimum": 0}
  },
  "required": ["choice", "index"],
  "additionalProperties": false
}`),
		InputZH:     catalog.SchemaZH{"/properties/options": "可供选择的选项"},
		Annotations: readOnly,
		SideEffect:  catalog.SideEffectNone,
		ReplaySafe:  true,
	}
}

func (*RandomChoice) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct {
		Options []string `json:"options"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	i, err := randIntn(len(in.Options))
	if err != nil {
		return nil, err
	}
	return &tools.Result{
		Structured: choice{Choice: in.Options[i], Index: i},
		Text:       fmt.Sprintf("%s (option %d of %d)", in.Options[i], i+1, len(in.Options)),
		Summary:    in.Options[i],
	}, nil
}

// choice is random_choice's output.
type choice struct {
	Choice string `json:"choice"`
	Index  int    `json:"index"`
}

func randIntn(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("random source: %w", err)
	}
	return int(v.Int64()), nil
}
