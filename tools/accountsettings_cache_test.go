package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// countingSettings is an AccountSettings in memory that counts its reads.
type countingSettings struct {
	deliveries map[string]map[string]tools.Delivery
	limits     map[string]tools.JobLimits
	reads      int
}

func (s *countingSettings) BuiltinDeliveries(_ context.Context, account string) (map[string]tools.Delivery, error) {
	s.reads++
	out := map[string]tools.Delivery{}
	for k, v := range s.deliveries[account] {
		out[k] = v
	}
	return out, nil
}

func (s *countingSettings) SetBuiltinDelivery(_ context.Context, account, tool string, d tools.Delivery, _ time.Time) error {
	if s.deliveries[account] == nil {
		s.deliveries[account] = map[string]tools.Delivery{}
	}
	s.deliveries[account][tool] = d
	return nil
}

func (s *countingSettings) JobLimits(_ context.Context, account string) (tools.JobLimits, error) {
	s.reads++
	return s.limits[account], nil
}

func (s *countingSettings) SetJobLimits(_ context.Context, account string, l tools.JobLimits) error {
	s.limits[account] = l
	return nil
}

// The settings cache answers repeated reads from memory, sees its own
// writes at once and another replica's once its TTL has passed, and keeps
// accounts apart.
func TestSettingsCacheReadsOncePerTTL(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &countingSettings{deliveries: map[string]map[string]tools.Delivery{}, limits: map[string]tools.JobLimits{}}
	c := tools.NewSettingsCache(st, time.Second, func() time.Time { return now })
	steps := []struct {
		name      string
		do        func()
		account   string
		delivery  tools.Delivery
		maxJobs   int
		wantReads int
	}{
		{"first read", nil, "acme", tools.DeliveryDefault, 0, 2},
		{"again, from memory", nil, "acme", tools.DeliveryDefault, 0, 2},
		{"a write here is seen at once", func() {
			_ = c.SetBuiltinDelivery(ctx, "acme", "run_code", tools.DeliveryAsync, now)
			_ = c.SetJobLimits(ctx, "acme", tools.JobLimits{MaxJobs: 3})
		}, "acme", tools.DeliveryAsync, 3, 4},
		{"another account is its own", nil, "globex", tools.DeliveryDefault, 0, 6},
		{"another replica's write, within the TTL", func() {
			st.deliveries["acme"]["run_code"] = tools.DeliveryInline
			st.limits["acme"] = tools.JobLimits{MaxJobs: 9}
		}, "acme", tools.DeliveryAsync, 3, 6},
		{"... and once it has passed", func() { now = now.Add(time.Second) }, "acme", tools.DeliveryInline, 9, 8},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		ds, err := c.BuiltinDeliveries(ctx, s.account)
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.JobLimits(ctx, s.account)
		if err != nil {
			t.Fatal(err)
		}
		if ds["run_code"] != s.delivery || l.MaxJobs != s.maxJobs || st.reads != s.wantReads {
			t.Errorf("%s: delivery %q, max_jobs %d, %d store reads; want %q, %d, %d", s.name, ds["run_code"], l.MaxJobs, st.reads, s.delivery, s.maxJobs, s.wantReads)
		}
	}
}
