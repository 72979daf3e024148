package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// How the list routes read their query strings. Every filter is checked
// before the store sees it, so a bad value is a 400 that says what is
// allowed, never a filter that silently matches nothing (or everything):
//   - an enum filter (status, caller_slot, provider_type, source, sort_by,
//     …) takes one of its values, given once and not empty; anything else
//     is validation_error with field and the allowed values (details
//     "allowed");
//   - a text filter (session_id, floor_id, tool_name, …) is 1 to
//     MaxFilterBytes bytes of UTF-8 without control characters (NUL
//     included: PostgreSQL could not even compare it);
//   - page_id follows the rule of page ids (tools.CheckPageID);
//   - an unknown or repeated parameter is refused (params).

// MaxFilterBytes bounds the value of a text filter; no id toolhost keeps
// is longer.
const MaxFilterBytes = 1024

type validationError struct {
	msg, field string
	// allowed are the values of an enum the request's value is not one of.
	allowed []string
}

func (e validationError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return validationError{msg: fmt.Sprintf(format, args...)}
}

// params reads the query strictly: unknown or repeated parameters are
// refused so a typo does not silently widen a filter.
// A query that does not parse (a ';', a bad %-escape) is refused too:
// url.Query would drop the offending pair and widen the filter.
func params(r *http.Request, allowed ...string) (url.Values, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("the query string does not parse: %s", clip.Echo(err.Error()))
	}
	for k, vals := range v {
		if !slices.Contains(allowed, k) {
			return nil, invalid("unknown query parameter %q; allowed: %s", clip.Echo(k), strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, validationError{msg: fmt.Sprintf("query parameter %q given %d times; give it once", k, len(vals)), field: k}
		}
	}
	return v, nil
}

// oneOf reads the enum filter name: def when absent, else one of allowed.
func oneOf(v url.Values, name string, allowed []string, def string) (string, error) {
	if !v.Has(name) {
		return def, nil
	}
	s := v.Get(name)
	if !slices.Contains(allowed, s) {
		return "", validationError{msg: fmt.Sprintf("%s must be one of %s, not %+q", name, strings.Join(allowed, ", "), clip.Echo(s)),
			field: name, allowed: allowed}
	}
	return s, nil
}

// text reads the text filter name: "" when absent.
func text(v url.Values, name string) (string, error) {
	if !v.Has(name) {
		return "", nil
	}
	s := v.Get(name)
	switch {
	case s == "":
		return "", validationError{msg: name + " is empty; leave it out to not filter on it", field: name}
	case len(s) > MaxFilterBytes:
		return "", validationError{msg: fmt.Sprintf("%s is %d bytes; at most %d are allowed", name, len(s), MaxFilterBytes), field: name}
	case !utf8.ValidString(s):
		return "", validationError{msg: name + " is not valid UTF-8", field: name}
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return "", validationError{msg: fmt.Sprintf("%s has the control character %U at byte %d", name, r, i), field: name}
		}
	}
	return s, nil
}

// filter is a text filter and where its value goes.
type filter struct {
	name string
	dst  *string
}

// texts reads text filters in order; the first bad one is the error.
func texts(v url.Values, fs ...filter) error {
	for _, f := range fs {
		s, err := text(v, f.name)
		if err != nil {
			return err
		}
		*f.dst = s
	}
	return nil
}

// pageID reads the page_id filter into q.
func pageID(v url.Values, q *journal.Query) error {
	if !v.Has("page_id") {
		return nil
	}
	id := v.Get("page_id")
	if te := tools.CheckPageID("page_id", id); te != nil {
		return validationError{msg: te.Message, field: "page_id"}
	}
	q.HasPageID, q.PageID = true, id
	return nil
}

func paging(v url.Values, q *journal.Query) error {
	q.Limit, q.Offset = 50, 0
	if s := v.Get("limit"); v.Has("limit") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return validationError{msg: fmt.Sprintf("limit must be an integer from 1 to %d, not %q", MaxLimit, clip.Echo(s)), field: "limit"}
		}
		q.Limit = n
	}
	if s := v.Get("offset"); v.Has("offset") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return validationError{msg: fmt.Sprintf("offset must be a non-negative integer, not %q", clip.Echo(s)), field: "offset"}
		}
		q.Offset = n
	}
	return nil
}
