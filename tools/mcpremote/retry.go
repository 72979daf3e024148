package mcpremote

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// The retry rules of remote calls (the tool-call seed, §6.9), beside the
// loop in call.go that applies them:
//
//   - a call that never reached the server (no connection, a session the
//     server no longer knows) is sent again once at once, on a new
//     session, whatever its side effects;
//   - a read (side-effect level none) lost after it was sent is sent
//     again once at once;
//   - a read the server refused with HTTP 429 or 503 is sent again, up to
//     maxReadAttempts in all, after a backoff: the server's Retry-After
//     when it gave one, else retryBase doubled at
//     each attempt, plus a random jitter of up to a quarter of it; a write
//     so refused is not sent again;
//   - a retry happens only when its wait fits in what is left of the
//     call's deadline (the server's timeout, or the caller's when
//     shorter); otherwise the last attempt's failure is the call's.
//
// Every attempt is reported to the journal (tools.Attempt), with the
// invocation id sent in the request's _meta under MetaInvocationID.
const (
	maxReadAttempts = 3
	retryBase       = 200 * time.Millisecond
)

// MetaInvocationID is the _meta key of a remote call's request that names
// the attempt (the execution id, a dot, the attempt number): a server that
// logs it can match what it saw to toolhost's journal.
const MetaInvocationID = "toolhost/invocation_id"

// invocationID names attempt n of the execution id.
func invocationID(id string, n int) string { return id + "." + strconv.Itoa(n) }

// left is how long ctx has before its deadline, in milliseconds (0
// without one). A context's deadline is on the wall clock its timer runs
// on, so it is read there, not on the gateway's clock.
func left(ctx context.Context) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(time.Until(d).Milliseconds(), 0)
}

// fits reports whether waiting d leaves ctx time for another attempt
// (on the wall clock, as left).
func fits(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || d < time.Until(dl)
}

// backoff is the wait before the attempt after attempt: none after a call
// that did not reach the server's tool, else (HTTP 429 or 503) the
// server's Retry-After or an exponential backoff, with the jitter part.
func (g *Gateway) backoff(attempt, status int, retryAfterHeader string) (time.Duration, time.Duration) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0, 0
	}
	d := retryBase << (attempt - 1)
	if ra := retryAfter(retryAfterHeader, g.opts.Now()); ra > 0 {
		d = ra
	}
	return d, g.opts.Jitter(d / 4)
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date
// (against now); 0 when absent, past or unreadable.
func retryAfter(header string, now time.Time) time.Duration {
	v := strings.TrimSpace(header)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		// A day is longer than any call's deadline: no retry then.
		return time.Duration(min(max(n, 0), 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// attemptOutcome words how an attempt ended for the journal.
func attemptOutcome(retry bool, err error) (string, string) {
	switch {
	case err == nil:
		return tools.AttemptOK, ""
	case retry:
		return tools.AttemptRetry, codeOf(err)
	}
	return tools.AttemptFailed, codeOf(err)
}

func codeOf(err error) string {
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Code
	}
	if errors.Is(err, context.Canceled) {
		return tools.CodeCancelled
	}
	return tools.CodeInternal
}

// wait is Options.Wait's default: a timer, or ctx's end.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// jitter is Options.Jitter's default: uniform in [0, upTo).
func jitter(upTo time.Duration) time.Duration {
	if upTo <= 0 {
		return 0
	}
	return rand.N(upTo)
}
