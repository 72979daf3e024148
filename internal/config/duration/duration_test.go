package duration_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
)

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{`"30s"`, 30 * time.Second, ""},
		{`"1h2m3.5s"`, time.Hour + 2*time.Minute + 3500*time.Millisecond, ""},
		{`"-1s"`, -time.Second, ""},
		{`"0s"`, 0, ""},
		{`30`, 0, `duration must be a string such as "30s"`},
		{`null`, 0, "invalid duration"}, // as before: a null is no duration
		{`"30"`, 0, "missing unit"},
		{`"1 day"`, 0, "time: "},
		{`"` + strings.Repeat("9", 4096) + `h"`, 0, "invalid duration"},
		{`{"s":"1s"}`, 0, "duration must be a string"},
		{`"90d"`, 90 * 24 * time.Hour, ""},
		{`"0d"`, 0, ""},
		{`"36501d"`, 0, "at most 36500 days"},
		{`"99999999999d"`, 0, "unknown unit"},
		{`"-1d"`, 0, "unknown unit"},
		{`"1.5d"`, 0, "unknown unit"},
		{`"d"`, 0, "invalid duration"},
		{`"٩d"`, 0, "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 20)], func(t *testing.T) {
			var d duration.Duration
			err := json.Unmarshal([]byte(tt.in), &d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || d.D() != tt.want {
				t.Fatalf("= %v, %v; want %v", d.D(), err, tt.want)
			}
		})
	}
}

func TestMarshalRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond * 300, 90 * time.Second, 720 * time.Hour} {
		b, err := json.Marshal(duration.Duration(d))
		if err != nil {
			t.Fatal(err)
		}
		var back duration.Duration
		if err := json.Unmarshal(b, &back); err != nil || back.D() != d {
			t.Fatalf("%v → %s → %v, %v", d, b, back.D(), err)
		}
	}
}
