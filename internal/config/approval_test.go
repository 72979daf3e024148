package config

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
)

func TestApprovalSettingsAreChecked(t *testing.T) {
	tests := []struct {
		name   string
		policy map[string]string
		ttl    time.Duration
		want   string // "" for valid
	}{
		{"Defaults", nil, 15 * time.Minute, ""},
		{"Policies", map[string]string{"get_time": "always", "run_code": "never", "fetch_page": "side_effect"}, time.Hour, ""},
		{"UnknownPolicy", map[string]string{"run_code": "sometimes"}, time.Minute, "tools.require_approval.run_code"},
		{"PolicyWithAZeroWidthSpace", map[string]string{"run_code": "never\u200b"}, time.Minute, "tools.require_approval.run_code"},
		{"TTLZero", nil, 0, "tools.approval_ttl"},
		{"TTLNegative", nil, -time.Minute, "tools.approval_ttl"},
		{"TTLOverAWeek", nil, 8 * 24 * time.Hour, "tools.approval_ttl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Tools.RequireApproval, c.Tools.ApprovalTTL = tc.policy, duration.Duration(tc.ttl)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}
