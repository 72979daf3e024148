package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
)

// Console is the "console" section of the config file: the operator
// console at /console (docs/console.md).
type Console struct {
	// TraceURL links an execution's trace id to a trace viewer:
	// "{trace_id}" in it is replaced by the id, for example
	// "https://jaeger.example/trace/{trace_id}". Empty: no link.
	TraceURL string `json:"trace_url"`
	// SessionLifetime is how long a console sign-in lasts ("0s": the
	// default, one hour; at most "24h").
	SessionLifetime duration.Duration `json:"session_lifetime"`
}

func (c Console) validate() error {
	if d := c.SessionLifetime.D(); d != 0 && (d < time.Minute || d > 24*time.Hour) {
		return fmt.Errorf("console.session_lifetime %q: want from \"1m\" to \"24h\" (\"0s\": the default, 1h)", d.String())
	}
	if c.TraceURL == "" {
		return nil
	}
	u, err := url.Parse(strings.ReplaceAll(c.TraceURL, "{trace_id}", "x"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.Contains(c.TraceURL, "{trace_id}") {
		return fmt.Errorf("console.trace_url %q: want an http(s) URL holding {trace_id}", clipKey(c.TraceURL))
	}
	return nil
}
