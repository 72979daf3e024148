// Package duration provides Duration, the one duration type of every
// config section (the file's own keys, fetch_page's, web_search's, the
// upstream routes'): a time.Duration written as a string such as "30s" in
// JSON, so a config file never holds bare nanoseconds.
package duration

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as "30s" in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as time.Duration.String does ("1m30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string time.ParseDuration accepts, or a whole
// number of days ("90d", for retention windows); a number or any
// other JSON value is refused with a message saying what is expected. The
// error is a *json.UnmarshalTypeError, so that encoding/json names the key
// that holds the bad value ("Go struct field Journal.journal.commit_delay").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return refused(b, "a duration must be a string such as \"30s\"")
	}
	v, err := parse(s)
	if err != nil {
		return refused(b, err.Error())
	}
	*d = Duration(v)
	return nil
}

// parse is time.ParseDuration, plus "Nd": N whole days (at most 36500).
func parse(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && len(days) <= 5 && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.Atoi(days)
		if err != nil || n > 36500 {
			return 0, fmt.Errorf("%q: want at most 36500 days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// refused is the error for the JSON value b, which is no duration: why.
func refused(b []byte, why string) error {
	v := string(b)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return &json.UnmarshalTypeError{Value: fmt.Sprintf("%s (%s)", v, why), Type: reflect.TypeFor[Duration]()}
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
