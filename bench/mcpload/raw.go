package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw client speaks just enough streamable HTTP to load a server: it
// opens a session (initialize, notifications/initialized) and then posts
// tools/call requests whose bodies are built from pre-encoded halves,
// reading each answer (JSON or an SSE stream) up to the JSON-RPC response
// with its id. It exists because the go-sdk client costs more CPU per call
// than the servers it loads (it decodes every message with a fresh decoder
// into generic maps): on a machine where the client and the server share
// the cores, the SDK client measured the pair, so a server that needs less
// CPU per call scored lower than it is. With this client, nearly all the
// CPU goes to the server under test. It is a load generator, not an MCP
// client: it checks that every answer is a successful result and nothing
// more.

type caller interface {
	call(ctx context.Context) error
	close() error
}

// sdkSession is the go-sdk client as a caller.
type sdkSession struct {
	cs   *mcp.ClientSession
	tool string
	args map[string]any
	// check, when set, judges every result (run_code's output, say) in
	// place of "not isError".
	check func(*mcp.CallToolResult) error
}

func (s sdkSession) call(ctx context.Context) error {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
	if err != nil {
		return err
	}
	if s.check != nil {
		return s.check(res)
	}
	if res.IsError {
		return fmt.Errorf("tool error: %s", contentText(res))
	}
	return nil
}

func (s sdkSession) close() error { return s.cs.Close() }

type rawSession struct {
	hc       *http.Client
	endpoint string
	session  string
	version  string
	prefix   []byte // `{"jsonrpc":"2.0","id":`
	suffix   []byte // `,"method":"tools/call","params":{...}}`
	id       int64
	body     bytes.Buffer
	idTag    []byte
}

func connectRaw(ctx context.Context, hc *http.Client, endpoint, name, tool string, args map[string]any) (*rawSession, error) {
	s := &rawSession{hc: hc, endpoint: endpoint}
	init := map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "1.0.0"}}}
	b, _ := json.Marshal(init)
	resp, err := s.post(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	s.session = resp.Header.Get("Mcp-Session-Id")
	msg, err := readResponse(resp, []byte(`"id":0`))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &res); err != nil || res.Result.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: no protocol version in %.200s", msg)
	}
	s.version = res.Result.ProtocolVersion
	resp, err = s.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	s.prefix = []byte(`{"jsonrpc":"2.0","id":`)
	s.suffix = []byte(`,"method":"tools/call","params":` + string(params) + `}`)
	return s, nil
}

func (s *rawSession) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	if s.version != "" {
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp, nil
}

func (s *rawSession) call(ctx context.Context) error {
	s.id++
	s.body.Reset()
	s.body.Write(s.prefix)
	s.body.WriteString(strconv.FormatInt(s.id, 10))
	s.body.Write(s.suffix)
	resp, err := s.post(ctx, s.body.Bytes())
	if err != nil {
		return err
	}
	s.idTag = append(append(s.idTag[:0], `"id":`...), strconv.FormatInt(s.id, 10)...)
	msg, err := readResponse(resp, s.idTag)
	if err != nil {
		return err
	}
	if !bytes.Contains(msg, []byte(`"result"`)) {
		return fmt.Errorf("not a result: %.200s", msg)
	}
	if bytes.Contains(msg, []byte(`"isError":true`)) {
		return fmt.Errorf("tool error: %.200s", msg)
	}
	return nil
}

func (s *rawSession) close() error {
	req, err := http.NewRequest(http.MethodDelete, s.endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", s.session)
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// readResponse returns the JSON-RPC message that carries idTag from a POST
// answer, a JSON body or an SSE stream (skipping notifications), and
// closes the body.
func readResponse(resp *http.Response, idTag []byte) ([]byte, error) {
	defer resp.Body.Close()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	r := bufio.NewReader(resp.Body)
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the event stream ended without the response")
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // end of an event
			if bytes.Contains(data, idTag) {
				// Drain the rest so the connection can be reused.
				_, _ = io.Copy(io.Discard, r)
				return data, nil
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		}
	}
}
