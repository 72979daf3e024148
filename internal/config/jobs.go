package config

import (
	"fmt"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

// Jobs configures deferred calls: the durable job queue in the store
// (docs/jobs.md).
type Jobs struct {
	// Workers is how many jobs one process runs at once (4).
	Workers int `json:"workers"`
	// Timeout is the deadline of one attempt of a deferred call ("10m").
	Timeout duration.Duration `json:"timeout"`
	// RescueAfter is how long a job may run before the queue takes its
	// process for dead and runs it again (default: timeout + 1m; more
	// than timeout).
	RescueAfter duration.Duration `json:"rescue_after"`
	// MaxPerAccount bounds an account's queued and running jobs (100).
	MaxPerAccount int `json:"max_per_account"`
}

// MaxJobTimeout is the longest jobs.timeout.
const MaxJobTimeout = 24 * time.Hour

func defaultJobs() Jobs {
	return Jobs{Workers: 4, Timeout: duration.Duration(tools.DefaultJobTimeout), MaxPerAccount: tools.DefaultMaxJobsPerAccount}
}

// validate checks the jobs section.
func (j Jobs) validate() error {
	if j.Workers < 1 || j.Workers > 1000 {
		return fmt.Errorf("jobs.workers %d: want 1 to 1000", j.Workers)
	}
	if d := j.Timeout.D(); d < time.Second || d > MaxJobTimeout {
		return fmt.Errorf("jobs.timeout %q: want from \"1s\" to %q", d.String(), MaxJobTimeout.String())
	}
	if d := j.RescueAfter.D(); d != 0 && d <= j.Timeout.D() {
		return fmt.Errorf("jobs.rescue_after %q: want more than jobs.timeout (%s), or leave it out", d.String(), j.Timeout.D())
	}
	if j.MaxPerAccount < 1 {
		return fmt.Errorf("jobs.max_per_account %d: want at least 1", j.MaxPerAccount)
	}
	return nil
}
