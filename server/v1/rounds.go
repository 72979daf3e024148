package v1

import (
	"context"
	"net/http"
	"sync"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// RoundStore keeps the latest round records (tag v1_tool_round) in memory
// for GET /v1/tool-rounds?request_id=…; every record also goes to the log.
type RoundStore struct {
	max int

	mu   sync.Mutex
	recs []loop.RoundLog
}

// NewRoundStore keeps the latest limit records (default 10 000).
func NewRoundStore(limit int) *RoundStore {
	if limit <= 0 {
		limit = 10000
	}
	return &RoundStore{max: limit}
}

// RecordRound implements loop.RoundRecorder.
func (s *RoundStore) RecordRound(_ context.Context, rec loop.RoundLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, rec)
	if over := len(s.recs) - s.max; over > 0 {
		s.recs = append([]loop.RoundLog(nil), s.recs[over:]...)
	}
}

// ByRequest returns the records of one request in round order, of one
// account only ("" matches records made without an identity, as in --dev).
func (s *RoundStore) ByRequest(accountID, requestID string) []loop.RoundLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []loop.RoundLog{}
	for _, r := range s.recs {
		if r.RequestID == requestID && r.AccountID == accountID {
			out = append(out, r)
		}
	}
	return out
}

func (s *RoundStore) serve(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("request_id")
	if id == "" {
		server.WriteError(w, http.StatusBadRequest, "request_id_required", "give ?request_id=req_… (the request_id of a /v1 response's extension field)")
		return
	}
	// A caller sees its own account's rounds only.
	caller, _ := identity.FromContext(r.Context())
	server.WriteJSON(w, http.StatusOK, roundList{Object: "list", Data: s.ByRequest(caller.AccountID, id)})
}

// roundList is the answer of GET /v1/tool-rounds.
type roundList struct {
	Data   []loop.RoundLog `json:"data"`
	Object string          `json:"object"`
}
