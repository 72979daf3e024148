package mcpremote

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ErrTokenForAnotherResource is a token whose audience shows it was
// issued for another resource than the MCP server's (RFC 8707): it is
// neither stored nor sent.
var ErrTokenForAnotherResource = errors.New("the authorization server issued a token for another resource: its aud claim does not name this MCP server")

// CodeTokenForAnotherResource is ErrTokenForAnotherResource's code.
const CodeTokenForAnotherResource = "token_for_another_resource"

// checkAudience refuses an RFC 9068 access token (a JWT whose typ is
// at+jwt) whose aud does not name resource. That profile is the one where
// a client may read the audience; any other token is opaque to a client
// and passes (the MCP server checks its own audience).
func checkAudience(token, resource string) error {
	parts := strings.Split(token, ".")
	if resource == "" || len(parts) != 3 {
		return nil
	}
	var head struct {
		Typ string `json:"typ"`
	}
	if jwtPart(parts[0], &head) != nil {
		return nil
	}
	if typ := strings.ToLower(head.Typ); typ != "at+jwt" && typ != "application/at+jwt" {
		return nil
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
	}
	if err := jwtPart(parts[1], &claims); err != nil {
		return fmt.Errorf("%w (its claims do not decode)", ErrTokenForAnotherResource)
	}
	var aud []string
	if json.Unmarshal(claims.Aud, &aud) != nil {
		var one string
		_ = json.Unmarshal(claims.Aud, &one)
		aud = []string{one}
	}
	if !oauthex.MatchesResource(aud, resource) {
		return fmt.Errorf("%w (it is for %q)", ErrTokenForAnotherResource, strings.Join(aud, " "))
	}
	return nil
}

func jwtPart(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// withResource adds the grant's resource to a refresh request (RFC 8707:
// every token request names it; x/oauth2 has no option for a refresh).
func withResource(req *http.Request, resource string) (*http.Request, error) {
	if resource == "" || req.Method != http.MethodPost || req.Body == nil ||
		!strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return req, nil
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", resource)
		raw = []byte(form.Encode())
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return out, nil
}
