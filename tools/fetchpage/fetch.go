package fetchpage

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/internal/egress"
)

// Failures the tool maps to stable codes.
var (
	errTooManyRedirects = errors.New("too many redirects")
	errTooLarge         = errors.New("body exceeds the size cap")
	errRobots           = errors.New("disallowed by robots.txt")
	errDomain           = errors.New("domain not allowed by the call's domain lists")
	errScheme           = errors.New("only http and https URLs can be fetched")
)

// maxURLLength is the longest URL accepted, initial or redirect target.
const maxURLLength = 2048

// domainLists are the call's allowed_domains / blocked_domains.
type domainLists struct {
	allowed, blocked egress.Domains
}

func newDomainLists(allowed, blocked []string) domainLists {
	norm := func(ds []string) egress.Domains {
		if len(ds) == 0 {
			return nil
		}
		m := egress.Domains{}
		for _, d := range ds {
			d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
			if n, err := egress.NormalizeHost(d); err == nil {
				d = n // the IDNA form, as hosts are compared
			}
			if d != "" {
				m[d] = true
			}
		}
		return m
	}
	return domainLists{allowed: norm(allowed), blocked: norm(blocked)}
}

func (l domainLists) permits(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if l.blocked != nil && l.blocked.Match(host) {
		return false
	}
	if l.allowed != nil && !l.allowed.Match(host) {
		return false
	}
	return true
}

// checkURL refuses what must never be requested, before any connection:
// other schemes, credentials, over-long URLs, hosts the SSRF policy
// refuses by their spelling (localhost, IP literals in any spelling), and
// hosts outside the call's domain lists.
func (t *Tool) checkURL(u *url.URL, lists domainLists) error {
	if len(u.String()) > maxURLLength {
		return fmt.Errorf("%w: URL longer than %d characters", errURLTooLong, maxURLLength)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errScheme
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs with credentials are not fetched", errInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", errInvalidURL)
	}
	// Check (and then dial) the name the transport would dial, not the
	// spelling in the URL.
	norm, err := egress.NormalizeHost(host)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errInvalidURL, quoteOutside(host), err)
	}
	if norm != host {
		host = norm
		if strings.Contains(host, ":") {
			norm = "[" + norm + "]"
		}
		if p := u.Port(); p != "" {
			norm += ":" + p
		}
		u.Host = norm
	}
	if err := t.policy.CheckName(host); err != nil {
		return err
	}
	if !lists.permits(host) {
		return fmt.Errorf("%s: %w", quoteOutside(host), errDomain)
	}
	return nil
}

var (
	errInvalidURL = errors.New("invalid URL")
	errURLTooLong = errors.New("URL too long")
)

type ctxKey int

const (
	keyHop ctxKey = iota // *hopState of the fetch in progress
)

// hopState carries the per-call checks into CheckRedirect.
type hopState struct {
	lists  domainLists
	robots bool
	held   int64 // body bytes reserved in the budget (budget.go)
}

// newClient builds the HTTP client every fetch (and robots.txt) goes through.
func (t *Tool) newClient() (*http.Client, error) {
	d := &egress.Dialer{Policy: t.policy, Resolver: t.resolver, Timeout: t.cfg.ConnectTimeout.D()}
	tr := &http.Transport{
		Proxy:                  nil, // never from the environment
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    t.cfg.ConnectTimeout.D(),
		ResponseHeaderTimeout:  t.cfg.Timeout.D(),
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        60 * time.Second,
		// We decode bodies ourselves so the size cap applies after
		// decompression and br is understood.
		DisableCompression: true,
	}
	if t.cfg.Proxy != "" {
		pu, err := url.Parse(t.cfg.Proxy)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("fetch.proxy %q: want an http(s) URL", t.cfg.Proxy)
		}
		tr.Proxy = http.ProxyURL(pu)
		// The operator chose the proxy; the dialer must be able to reach it,
		// and only it: the exemption is for this exact host:port, not an
		// allow-list entry that targets could use too.
		port := pu.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
		}
		d.Proxy = net.JoinHostPort(strings.ToLower(pu.Hostname()), port)
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if limit := *t.cfg.MaxRedirects; len(via) > limit {
				if limit == 0 {
					return fmt.Errorf("%w: %s redirects to %s, and this server follows no redirects (fetch.max_redirects is 0); fetch that URL if it is the page wanted",
						errTooManyRedirects, quoteURL(via[0].URL), quoteURL(req.URL))
				}
				return fmt.Errorf("%w: %s redirects more than %d times", errTooManyRedirects, quoteURL(via[0].URL), limit)
			}
			hs, _ := req.Context().Value(keyHop).(*hopState)
			if hs == nil {
				hs = &hopState{}
			}
			if err := t.checkURL(req.URL, hs.lists); err != nil {
				return err
			}
			if err := t.checkProxied(req.Context(), req.URL); err != nil {
				return err
			}
			if hs.robots {
				return t.robots.check(req.Context(), req.URL)
			}
			return nil
		},
	}, nil
}

// quoteURL is u for a message (quoteOutside): a redirect's target is
// whatever the site sent.
func quoteURL(u *url.URL) string { return quoteOutside(u.Redacted()) }

// quoteOutside is a value a site sent (a redirect's target, a host name,
// a header) for an error message, cut after 200 bytes (a header may hold
// 64 KiB, and the message is read for what it says after it) and with
// every byte a URL does not need as it is (markup, quotes, white space,
// control characters, non-ASCII) percent-encoded: a site cannot write a
// tag, a line or a look-alike into the message through it. Longer free
// text from a site is fenced instead (tools.Fence).
func quoteOutside(s string) string {
	const limit = 200
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if b.Len() >= limit {
			b.WriteString("…")
			break
		}
		if c := s[i]; plainInURL(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// plainInURL: the unreserved and reserved characters of RFC 3986, and the
// percent sign of an escape.
func plainInURL(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0
}

// checkProxied resolves the target host itself when a proxy is configured:
// the dialer then only sees the proxy, so this is the check that keeps a
// proxied fetch off private addresses (best effort: the proxy resolves
// again).
func (t *Tool) checkProxied(ctx context.Context, u *url.URL) error {
	if t.cfg.Proxy == "" {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout.D())
	defer cancel()
	return t.policy.Check(rctx, t.resolver, u.Hostname())
}

// response is a fetched body, decoded and capped.
type response struct {
	FinalURL    *url.URL
	Status      int
	ContentType string // media type, lower case, without parameters
	RawType     string // the header as sent (charset parameter included)
	Body        []byte
}

// progressFunc reports download progress (total 0 when unknown).
type progressFunc func(done, total int64)

// get fetches u and returns its decoded body. Status >= 400 is returned as a
// response, not an error, so the caller can report it.
func (t *Tool) get(ctx context.Context, u *url.URL, hs *hopState, progress progressFunc) (_ *response, err error) {
	ctx, span := t.tel.startGet(ctx, u.Hostname())
	var status, n int
	kind := "other"
	defer func() { t.tel.endGet(ctx, span, status, kind, n, err) }()
	req, err := http.NewRequestWithContext(context.WithValue(ctx, keyHop, hs), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidURL, err)
	}
	if t.tel.prop != nil {
		t.tel.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,application/json;q=0.8,*/*;q=0.5")
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	rawType := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(rawType)
	mediaType = strings.ToLower(mediaType)
	out := &response{FinalURL: resp.Request.URL, Status: resp.StatusCode, ContentType: mediaType, RawType: rawType}
	status, kind = resp.StatusCode, contentKind(mediaType)
	if resp.StatusCode >= 400 {
		// A little of the body is enough to say nothing; drain none.
		return out, nil
	}
	limit := t.cfg.MaxHTMLBytes
	if mediaType == "application/pdf" || strings.HasSuffix(strings.ToLower(resp.Request.URL.Path), ".pdf") {
		limit = t.cfg.MaxPDFBytes
	}
	if resp.ContentLength > limit && resp.Header.Get("Content-Encoding") == "" {
		return nil, fmt.Errorf("%w: %d bytes announced, cap %d", errTooLarge, resp.ContentLength, limit)
	}
	// Reserve the most this body can take before reading it.
	want := limit
	if resp.ContentLength >= 0 && resp.Header.Get("Content-Encoding") == "" {
		want = min(resp.ContentLength, limit)
	}
	if err := t.budget.hold(ctx, hs, want); err != nil {
		return nil, err
	}
	body, err := readBody(resp, limit, progress)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u.Redacted(), err)
	}
	out.Body = body
	n = len(body)
	return out, nil
}

// readBody reads the body through the content decoders and the cap. Both
// the wire bytes and the decoded bytes are capped, so a compression bomb
// stops at the cap.
func readBody(resp *http.Response, limit int64, progress progressFunc) ([]byte, error) {
	var r io.Reader = &countingReader{r: io.LimitReader(resp.Body, limit+1), total: resp.ContentLength, progress: progress}
	encs := strings.Split(resp.Header.Get("Content-Encoding"), ",")
	if len(encs) > 2 {
		return nil, fmt.Errorf("%w: more than two content encodings", errTooLarge)
	}
	for i := len(encs) - 1; i >= 0; i-- {
		switch enc := strings.ToLower(strings.TrimSpace(encs[i])); enc {
		case "", "identity":
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
			defer zr.Close()
			r = zr
		case "br":
			r = brotli.NewReader(r)
		case "deflate":
			// Servers send zlib-wrapped or raw deflate; peek to tell which.
			br := bufio.NewReader(r)
			hdr, _ := br.Peek(2)
			if len(hdr) == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
				zr, err := zlib.NewReader(br)
				if err != nil {
					return nil, fmt.Errorf("deflate: %w", err)
				}
				defer zr.Close()
				r = zr
			} else {
				fr := flate.NewReader(br)
				defer fr.Close()
				r = fr
			}
		default:
			return nil, fmt.Errorf("%w: content encoding %s", errUnsupported, quoteOutside(enc))
		}
	}
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	if err != nil {
		return nil, err
	}
	return body, nil
}

var errUnsupported = errors.New("unsupported content")

// countingReader reports progress every few hundred KiB.
type countingReader struct {
	r        io.Reader
	n, last  int64
	total    int64
	progress progressFunc
}

const progressStep = 256 << 10

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && (c.n-c.last >= progressStep || (err == io.EOF && c.last > 0 && c.n != c.last)) {
		c.last = c.n
		total := c.total
		if total < 0 {
			total = 0
		}
		c.progress(c.n, total)
	}
	return n, err
}

// isTimeout reports whether err is a deadline of ours or of the network.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
