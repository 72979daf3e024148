package tools

import (
	"regexp"

	"github.com/toolhost/toolhost/internal/clip"
)

// A page, in the seed's vocabulary, is one version of a floor's answer:
// a caller that regenerates a turn writes a new page of the same floor,
// and the tool calls of each run belong to the page that run produced.
// toolhost cannot know a caller's pages, so a page id exists only when
// the caller names one (MCP _meta toolhost/page-id, the X-Toolhost-Page-Id
// header or metadata.page_id on /v1); it is journaled as page_id, which
// GET /tools/call-records?page_id= and the executions filter on.

// MaxPageIDBytes bounds a page id.
const MaxPageIDBytes = 128

var pagePattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// CheckPageID reports why a page id a caller named is refused: a page id
// is 1–128 characters of letters, digits, '.', '_', ':' and '-' (the rule
// of session ids). The error is an invalid_arguments tool error whose
// message names where the id came from (from) and quotes it, clipped.
func CheckPageID(from, id string) *Error {
	if pagePattern.MatchString(id) {
		return nil
	}
	return Errorf(CodeInvalidArgs, "%s %+q is refused: a page id is 1 to %d characters of A-Z a-z 0-9 . _ : -",
		from, clip.Echo(id), MaxPageIDBytes)
}

// pageOf is the page id a record keeps: none for one the pipeline refuses,
// so a hostile value is echoed (clipped) in the refusal but never stored.
func pageOf(id string) string {
	if pagePattern.MatchString(id) {
		return id
	}
	return ""
}
