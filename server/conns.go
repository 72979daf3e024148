package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/wire"
)

// Limits bound what one client can hold of the server: sockets, idle time,
// header bytes and the time to send a request body. Zero values take the
// defaults below; a negative connection cap turns that cap off.
type Limits struct {
	// ReadHeaderTimeout bounds the request line and headers (10 s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request
	// (120 s).
	IdleTimeout time.Duration
	// BodyTimeout bounds reading a whole request body, counted from the end
	// of its headers (60 s): a client that announces a body and trickles it
	// is cut off. Responses are not bounded: SSE streams write for as long
	// as they need.
	BodyTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers (64 KiB).
	MaxHeaderBytes int
	// MaxConns caps open connections in all (4096); MaxConnsPerIP caps
	// those of one client address (256). At the total cap the connection
	// idle the longest between requests is closed to make room; when none
	// is idle, and over the per-address cap, a new connection is answered
	// 503 and closed at once, before any request is read.
	MaxConns      int
	MaxConnsPerIP int
	// TrustedProxies are exempt from MaxConnsPerIP (they carry many
	// clients), and their X-Forwarded-For names the client (ClientAddr).
	TrustedProxies TrustedProxies
}

// Defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultBodyTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 4096
	DefaultMaxConnsPerIP     = 256
)

func (l Limits) withDefaults() Limits {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerIP == 0 {
		l.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	return l
}

// connLimiter is a listener that counts open connections, in all and per
// client address, and refuses the excess at accept time.
type connLimiter struct {
	net.Listener
	total, perIP int // <0: no cap
	trusted      TrustedProxies

	mu    sync.Mutex
	open  int
	byIP  map[string]int
	idle  map[*countedConn]time.Time // keep-alive connections between requests
	onRef func()                     // test hook: a connection was refused
}

func limitConns(ln net.Listener, total, perIP int, trusted TrustedProxies) *connLimiter {
	return &connLimiter{Listener: ln, total: total, perIP: perIP, trusted: trusted, byIP: map[string]int{}, idle: map[*countedConn]time.Time{}}
}

// refusal is written to a connection over a cap: a complete HTTP answer,
// so a client sees why, sent before any request is read.
var refusal = func() []byte {
	b, _ := json.Marshal(wire.ErrorBody{Error: wire.ErrorObject{Code: "too_many_connections",
		Message: "the server holds too many connections from you or in all; close idle connections and retry"}})
	body := string(b) + "\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		var evict *countedConn
		if l.total >= 0 && l.open >= l.total && (l.perIP < 0 || l.byIP[ip] < l.perIP) {
			// At the total cap, an idle keep-alive connection makes room:
			// idle sockets must not lock out a client with a request to send.
			var oldest time.Time
			for ic, since := range l.idle {
				if evict == nil || since.Before(oldest) {
					evict, oldest = ic, since
				}
			}
			if evict != nil {
				delete(l.idle, evict)
				l.open-- // counted free now; its Close releases nothing twice
				if l.byIP[evict.ip]--; l.byIP[evict.ip] <= 0 {
					delete(l.byIP, evict.ip)
				}
				evict.released = true
			}
		}
		over := (l.total >= 0 && l.open >= l.total) || (l.perIP >= 0 && l.byIP[ip] >= l.perIP && !l.trusted.trusts(remoteAddr(ip)))
		if !over {
			l.open++
			l.byIP[ip]++
		}
		hook := l.onRef
		l.mu.Unlock()
		if evict != nil {
			_ = evict.Conn.Close()
		}
		if over {
			// Never block the accept loop on a slow peer.
			_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = c.Write(refusal)
			_ = c.Close()
			if hook != nil {
				hook()
			}
			continue
		}
		return &countedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Open returns the number of connections currently counted.
func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// connState follows net/http's view of each connection, to know which are
// idle between requests (http.Server.ConnState).
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if st == http.StateIdle && !cc.released {
		l.idle[cc] = time.Now()
	} else {
		delete(l.idle, cc)
	}
	l.mu.Unlock()
}

func (l *connLimiter) release(c *countedConn) {
	ip := c.ip
	l.mu.Lock()
	delete(l.idle, c)
	if c.released {
		l.mu.Unlock()
		return
	}
	c.released = true
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
	l.mu.Unlock()
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

type countedConn struct {
	net.Conn
	l        *connLimiter
	ip       string
	once     sync.Once
	released bool // under l.mu: no longer counted
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// bodyDeadline gives a request that carries a body BodyTimeout to deliver
// all of it, and lifts the deadline once the body has been read to its end,
// so the response (an SSE stream, say) is never cut by it. Requests without
// a body get no read deadline: net/http is already waiting in the
// background for the client to go away, and a deadline there would cancel
// the request.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			next.ServeHTTP(w, r) // not a connection we can time (tests' recorders)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: timeout}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return n, fmt.Errorf("the request body did not arrive within %s: %w", b.timeout, err)
		}
		// The whole body is in (or the read failed for good): lift the
		// deadline so it cannot touch the response.
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
