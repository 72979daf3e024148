package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// apiError is the REST API's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// apiCall is a REST request made in process with the session's key as the
// bearer: the route's own authentication, scope and account checks decide
// it exactly as they decide a request from outside.
func (c *Console) apiCall(ctx context.Context, rq *request, method, path string, body, out any) (status int, msg string, err error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", fmt.Errorf("console %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return 0, "", fmt.Errorf("console %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+rq.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{h: http.Header{}, status: http.StatusOK}
	c.o.API.ServeHTTP(rec, req)
	if rec.status >= 300 {
		var e apiError
		if json.Unmarshal(rec.body.Bytes(), &e) == nil && e.Error.Code != "" {
			return rec.status, e.Error.Code + ": " + e.Error.Message, nil
		}
		return rec.status, fmt.Sprintf("%s %s answered %d", method, path, rec.status), nil
	}
	if out != nil {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return rec.status, "", fmt.Errorf("console %s %s: %w", method, path, err)
		}
	}
	return rec.status, "", nil
}

// recorder keeps an in-process answer.
type recorder struct {
	h      http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(s int) {
	if !r.wrote {
		r.status, r.wrote = s, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	n, err := r.body.Write(b)
	if err != nil {
		return n, fmt.Errorf("console recorder: %w", err)
	}
	return n, nil
}
