package catalog

import "strings"

// Face is the way a request reaches toolhost. Each face has a default
// language for requests that state no preference.
type Face string

const (
	// FaceMCP is the MCP server, over streamable HTTP and stdio.
	FaceMCP Face = "mcp"
	// FaceHosted is the /v1 model endpoints (Chat Completions, Responses,
	// Messages).
	FaceHosted Face = "hosted"
	// FaceREST is the tools REST API (GET /tools/builtin), whose seed
	// examples are English.
	FaceREST Face = "rest"
)

// DefaultLang is the face's language for a request that states no
// preference: English for MCP, whose clients and models mostly read
// English, and for the REST API; Chinese for /v1, as the seed says.
func (f Face) DefaultLang() Lang {
	if f == FaceHosted {
		return Chinese
	}
	return English
}

// RequestLang decides the language of the text a request gets back (tool
// titles and descriptions, the descriptions inside their schemas,
// messages, prompts); no other code does. An
// Accept-Language header that states a preference decides by the seed's
// rule: a value starting with "en" is English, any other Chinese. Without
// one — no header, an empty one, or "*", which Node's fetch (so every
// TypeScript MCP client) sends by default — the face's default decides.
func RequestLang(face Face, acceptLanguage string) Lang {
	h := strings.TrimSpace(acceptLanguage)
	if h == "" || h == "*" {
		return face.DefaultLang()
	}
	if len(h) >= 2 && strings.EqualFold(h[:2], "en") {
		return English
	}
	return Chinese
}
