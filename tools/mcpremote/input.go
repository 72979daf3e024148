package mcpremote

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/tools/approval"
)

// Input is the body of POST and PATCH /mcp-servers: every field optional
// on PATCH, name and url required on POST. Secrets come in here and go
// nowhere but the Sealer.
type Input struct {
	Name    *string              `json:"name"`
	URL     *string              `json:"url"`
	Headers *map[string]string   `json:"headers"`
	Auth    *AuthInput           `json:"auth"`
	Enabled *bool                `json:"enabled"`
	Timeout *string              `json:"timeout"`
	Tools   *map[string]Override `json:"tools"`
	// Defaults replace the server's defaults whole.
	Defaults *Defaults `json:"defaults"`
}

// AuthInput is the "auth" object of Input.
type AuthInput struct {
	Type         string   `json:"type"`
	Token        string   `json:"token,omitempty"`
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// Empty reports a PATCH with nothing to change.
func (in Input) Empty() bool {
	return in.Name == nil && in.URL == nil && in.Headers == nil && in.Auth == nil && in.Enabled == nil &&
		in.Timeout == nil && in.Tools == nil && in.Defaults == nil
}

// FieldError is a validation failure of one field.
type FieldError struct {
	Field string
	Msg   string
	// Code is a machine code other than validation_error, when one fits
	// (none does today: every auth type is supported).
	Code string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

var (
	nameRe       = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// reservedHeaders are set by the transport or the auth and may not be
// overridden by a registration.
var reservedHeaders = []string{"Accept", "Authorization", "Content-Length", "Content-Type", "Host", "Mcp-Session-Id",
	"Mcp-Protocol-Version", "Last-Event-Id", "Connection", "Transfer-Encoding", "Cookie"}

// Rules are what Apply needs from its caller.
type Rules struct {
	// Slots are the caller slots an allowed_slots override may name.
	Slots []string
}

// Apply validates in and writes it into s and sec (create: every
// required field must be present).
func (r Rules) Apply(s *Server, sec *Secrets, in Input, create bool) error {
	if create && in.Name == nil {
		return fieldErr("name", "is required: the namespace of the server's tools, e.g. \"github\"")
	}
	if create && in.URL == nil {
		return fieldErr("url", "is required: the server's streamable HTTP endpoint")
	}
	if in.Name != nil {
		n := *in.Name
		switch {
		case n == "" || len(n) > MaxServerNameLen:
			return fieldErr("name", "must be 1 to %d characters", MaxServerNameLen)
		case strings.Contains(n, "__") || !nameRe.MatchString(n):
			return fieldErr("name", "must start with a lower-case letter and hold only lower-case letters, digits and single '_' (no \"__\": it separates the server from the tool in NAME__tool)")
		}
		s.Name = n
	}
	if in.URL != nil {
		u, err := CheckURL(*in.URL)
		if err != nil {
			return &FieldError{Field: "url", Msg: err.Error()}
		}
		if u != s.URL {
			// A consent's tokens are for the server that was authorized;
			// they never go to another URL.
			sec.Grant = nil
		}
		s.URL = u
	}
	if in.Headers != nil {
		h := *in.Headers
		if len(h) > MaxHeaders {
			return fieldErr("headers", "at most %d headers", MaxHeaders)
		}
		names := make([]string, 0, len(h))
		clean := make(map[string]string, len(h))
		for k, v := range h {
			ck := http.CanonicalHeaderKey(k)
			switch {
			case !headerNameRe.MatchString(k) || len(k) > 128:
				return fieldErr("headers", "%q is not a header name", clip.Echo(k))
			case slices.Contains(reservedHeaders, ck):
				return fieldErr("headers", "%s is set by toolhost itself (use auth for Authorization)", ck)
			case strings.ContainsAny(v, "\r\n\x00") || len(v) > 8<<10:
				return fieldErr("headers", "the value of %s must be one line of at most 8 KiB", ck)
			}
			if _, dup := clean[ck]; dup {
				return fieldErr("headers", "%s is given twice (header names are case-insensitive)", ck)
			}
			clean[ck] = v
			names = append(names, ck)
		}
		sort.Strings(names)
		s.HeaderNames, sec.Headers = names, clean
	}
	if in.Auth != nil {
		if err := applyAuth(s, sec, *in.Auth); err != nil {
			return err
		}
	} else if create {
		s.Auth = Auth{Type: AuthNone}
	}
	if in.Enabled != nil {
		s.Enabled = *in.Enabled
	} else if create {
		s.Enabled = true
	}
	if in.Timeout != nil {
		d, err := time.ParseDuration(*in.Timeout)
		if err != nil || d < 100*time.Millisecond || d > MaxTimeout {
			return fieldErr("timeout", "must be a duration from 100ms to %s, like \"30s\"", MaxTimeout)
		}
		s.Timeout = d
	}
	if in.Tools != nil {
		t := *in.Tools
		if len(t) > MaxTools {
			return fieldErr("tools", "at most %d tool overrides", MaxTools)
		}
		for name, o := range t {
			if name == "" || len(name) > 128 {
				return fieldErr("tools", "a tool name must be 1 to 128 bytes")
			}
			if err := r.governance("tools", clip.Echo(name)+": ", o.SideEffectLevel, o.AllowedSlots, o.RequireApproval); err != nil {
				return err
			}
			if err := delivery(clip.Echo(name)+": ", o); err != nil {
				return err
			}
		}
		s.Tools = t
	}
	if in.Defaults != nil {
		if err := r.governance("defaults", "", in.Defaults.SideEffectLevel, in.Defaults.AllowedSlots, in.Defaults.RequireApproval); err != nil {
			return err
		}
		s.Defaults = *in.Defaults
	}
	return nil
}

// delivery checks an override's async_capability and
// default_delivery_mode.
func delivery(prefix string, o Override) error {
	if o.AsyncCapability != nil && *o.AsyncCapability != catalog.InlineOnly && *o.AsyncCapability != catalog.DeferredOK {
		return fieldErr("tools", "%sasync_capability must be inline_only or deferred_ok", prefix)
	}
	if o.DefaultDeliveryMode == nil {
		return nil
	}
	switch *o.DefaultDeliveryMode {
	case "inline":
	case "async_job":
		if o.AsyncCapability == nil || *o.AsyncCapability != catalog.DeferredOK {
			return fieldErr("tools", "%sdefault_delivery_mode async_job needs async_capability deferred_ok", prefix)
		}
	default:
		return fieldErr("tools", "%sdefault_delivery_mode must be inline or async_job", prefix)
	}
	return nil
}

// governance checks a side-effect level, slots and an approval policy of
// an override or of the server's defaults.
func (r Rules) governance(field, prefix string, side *string, slots *[]string, policy *string) error {
	if policy != nil {
		if _, err := approval.ParsePolicy(*policy); err != nil {
			return fieldErr(field, "%srequire_approval %s", prefix, err)
		}
	}
	if side != nil && !slices.Contains([]string{"none", "sandbox", "irreversible"}, *side) {
		return fieldErr(field, "%sside_effect_level must be none, sandbox or irreversible", prefix)
	}
	if slots == nil {
		return nil
	}
	if len(*slots) > len(r.Slots) {
		return fieldErr(field, "%sallowed_slots: at most %d slots (the slots are %v)", prefix, len(r.Slots), r.Slots)
	}
	for _, sl := range *slots {
		if !slices.Contains(r.Slots, sl) {
			return fieldErr(field, "%sallowed_slots: %q is not a slot; the slots are %v", prefix, clip.Echo(sl), r.Slots)
		}
	}
	return nil
}

func applyAuth(s *Server, sec *Secrets, a AuthInput) error {
	// A new auth forgets the old credentials, an authorization included.
	sec.BearerToken, sec.ClientSecret, sec.Grant = "", "", nil
	switch a.Type {
	case AuthNone, "":
		if a.Token != "" || a.ClientSecret != "" || a.ClientID != "" || a.TokenURL != "" {
			return fieldErr("auth", "type none takes no token or client")
		}
		s.Auth = Auth{Type: AuthNone}
	case AuthBearer:
		if a.Token == "" || strings.ContainsAny(a.Token, "\r\n\x00 ") || len(a.Token) > 8<<10 {
			return fieldErr("auth.token", "bearer needs a token: one word of at most 8 KiB")
		}
		if a.ClientSecret != "" || a.ClientID != "" || a.TokenURL != "" {
			return fieldErr("auth", "type bearer takes only a token")
		}
		s.Auth, sec.BearerToken = Auth{Type: AuthBearer}, a.Token
	case AuthClientCredentials:
		if a.ClientID == "" || a.ClientSecret == "" || a.TokenURL == "" {
			return fieldErr("auth", "oauth_client_credentials needs token_url, client_id and client_secret")
		}
		if a.Token != "" {
			return fieldErr("auth.token", "oauth_client_credentials gets its token from token_url; send no token")
		}
		u, err := CheckURL(a.TokenURL)
		if err != nil {
			return &FieldError{Field: "auth.token_url", Msg: err.Error()}
		}
		s.Auth, sec.ClientSecret = Auth{Type: AuthClientCredentials, TokenURL: u, ClientID: a.ClientID, Scopes: a.Scopes}, a.ClientSecret
	case AuthAuthorizationCode:
		// The endpoints come from the server's metadata at authorization.
		if a.Token != "" || a.TokenURL != "" {
			return fieldErr("auth", "oauth_authorization_code discovers its endpoints from the server; send no token or token_url")
		}
		if a.ClientSecret != "" && a.ClientID == "" {
			return fieldErr("auth.client_secret", "a client_secret needs its client_id")
		}
		if len(a.ClientID) > 1024 || strings.ContainsAny(a.ClientID, "\r\n\x00") {
			return fieldErr("auth.client_id", "must be one line of at most 1 KiB")
		}
		s.Auth, sec.ClientSecret = Auth{Type: AuthAuthorizationCode, ClientID: a.ClientID, Scopes: a.Scopes}, a.ClientSecret
	default:
		return fieldErr("auth.type", "must be none, bearer, oauth_client_credentials or oauth_authorization_code")
	}
	return nil
}

// CheckURL checks the shape of a server URL: absolute http or https, a
// host, no user info, no fragment. Where it may connect is the dialer's
// SSRF policy, checked at every connection.
func CheckURL(raw string) (string, error) {
	if len(raw) > 2048 {
		return "", fmt.Errorf("is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("is not a URL: %s", clip.Echo(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("must be http or https (stdio servers are not supported)")
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("has no host")
	case u.User != nil:
		return "", fmt.Errorf("must not carry a user or password; use headers or auth")
	case u.Fragment != "":
		return "", fmt.Errorf("must not have a fragment")
	}
	return u.String(), nil
}
