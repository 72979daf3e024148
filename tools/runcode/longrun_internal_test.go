package runcode

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// A run longer than sandbox.MaxTimeout is a background job's only, up to
// the deferred limit; memory and the other limits do not change.
func TestLongRunsAreForBackgroundJobsOnly(t *testing.T) {
	cases := []struct {
		name      string
		timeoutMS int
		longest   time.Duration
		long      bool
		refused   string
	}{
		{"inline at the inline limit", 60000, sandbox.MaxTimeout, false, ""},
		{"inline over it", 120000, sandbox.MaxTimeout, false, "background job"},
		{"a job over the inline limit", 120000, 10 * time.Minute, true, ""},
		{"a job at its limit", 600000, 10 * time.Minute, true, ""},
		{"a job over its limit", 600001, 10 * time.Minute, false, "in a background job"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := request(input{Code: "print(1)", TimeoutMS: tc.timeoutMS}, tc.longest)
			if tc.refused != "" {
				var te *tools.Error
				if !errors.As(err, &te) || te.Code != CodeInvalidInput || !strings.Contains(te.Message, tc.refused) {
					t.Fatalf("err %v, want invalid_input naming %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.LongRun != tc.long || req.Timeout != time.Duration(tc.timeoutMS)*time.Millisecond {
				t.Fatalf("request: long %v timeout %s", req.LongRun, req.Timeout)
			}
		})
	}
}
