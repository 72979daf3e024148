package v1

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// RoundStore keeps the round records (tag v1_tool_round) for GET
// /v1/tool-rounds?request_id=…; every record also goes to the log. With
// RoundRows (the SQL store) every replica reads every replica's records;
// without, the latest records stay in this process's memory.
type RoundStore struct {
	max int

	mu   sync.Mutex
	recs []loop.RoundLog

	rows      RoundRows
	retention time.Duration
	now       func() time.Time
	logger    *slog.Logger
	pruned    time.Time // when the last prune ran (mu)
}

// RoundRows is where replicas keep round records (internal/store).
type RoundRows interface {
	InsertRound(ctx context.Context, accountID, requestID, runID string, round int, at time.Time, record []byte) error
	RoundsOfRequest(ctx context.Context, accountID, requestID string) ([][]byte, error)
	PruneRounds(ctx context.Context, before time.Time, limit int) (int64, error)
}

// DefaultRoundRetention is how long a shared round record is kept.
const DefaultRoundRetention = 7 * 24 * time.Hour

// NewRoundStore keeps the latest limit records (default 10 000) in memory.
func NewRoundStore(limit int) *RoundStore {
	if limit <= 0 {
		limit = 10000
	}
	return &RoundStore{max: limit, logger: slog.New(slog.DiscardHandler)}
}

// NewSharedRoundStore keeps the records in rows for retention (default
// DefaultRoundRetention) on the clock now (nil: the wall clock). Older
// records are deleted at most once an hour, by the call that records a
// round then: an idle server runs no timer.
func NewSharedRoundStore(rows RoundRows, retention time.Duration, now func() time.Time, logger *slog.Logger) *RoundStore {
	if retention <= 0 {
		retention = DefaultRoundRetention
	}
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &RoundStore{rows: rows, retention: retention, now: now, logger: logger}
}

// RecordRound implements loop.RoundRecorder.
func (s *RoundStore) RecordRound(ctx context.Context, rec loop.RoundLog) {
	if s.rows != nil {
		s.recordShared(ctx, rec)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, rec)
	if over := len(s.recs) - s.max; over > 0 {
		s.recs = append([]loop.RoundLog(nil), s.recs[over:]...)
	}
}

// recordShared writes rec to the rows; a failure costs the record, never
// the request (the record is in the log too).
func (s *RoundStore) recordShared(ctx context.Context, rec loop.RoundLog) {
	ctx = context.WithoutCancel(ctx)
	data, err := json.Marshal(rec)
	if err == nil {
		err = s.rows.InsertRound(ctx, rec.AccountID, rec.RequestID, rec.RunID, rec.Round, rec.Time, data)
	}
	if err != nil {
		s.logger.WarnContext(ctx, "round record not stored", "request_id", rec.RequestID, "round", rec.Round, "error", err)
	}
	now := s.now()
	s.mu.Lock()
	due := now.Sub(s.pruned) >= time.Hour
	if due {
		s.pruned = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	for {
		n, err := s.rows.PruneRounds(ctx, now.Add(-s.retention), 1000)
		if err != nil {
			s.logger.WarnContext(ctx, "round records not pruned", "error", err)
			return
		}
		if n < 1000 {
			return
		}
	}
}

// ByRequest returns the records of one request in round order, of one
// account only ("" matches records made without an identity, as in --dev);
// none when the shared rows cannot be read (logged).
func (s *RoundStore) ByRequest(accountID, requestID string) []loop.RoundLog {
	ctx := context.Background()
	recs, err := s.byRequest(ctx, accountID, requestID)
	if err != nil {
		s.logger.ErrorContext(ctx, "round records not read", "request_id", requestID, "error", err)
		return []loop.RoundLog{}
	}
	return recs
}

func (s *RoundStore) byRequest(ctx context.Context, accountID, requestID string) ([]loop.RoundLog, error) {
	out := []loop.RoundLog{}
	if s.rows != nil {
		recs, err := s.rows.RoundsOfRequest(ctx, accountID, requestID)
		if err != nil {
			return nil, err
		}
		for _, data := range recs {
			var r loop.RoundLog
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.RequestID == requestID && r.AccountID == accountID {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *RoundStore) serve(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("request_id")
	if id == "" {
		server.WriteError(w, http.StatusBadRequest, "request_id_required", "give ?request_id=req_… (the request_id of a /v1 response's extension field)")
		return
	}
	// A caller sees its own account's rounds only.
	caller, _ := identity.FromContext(r.Context())
	recs, err := s.byRequest(r.Context(), caller.AccountID, id)
	if err != nil {
		s.logger.ErrorContext(r.Context(), "round records not read", "request_id", id, "error", err)
		server.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", "the round records could not be read; retry shortly")
		return
	}
	server.WriteJSON(w, http.StatusOK, roundList{Object: "list", Data: recs})
}

// roundList is the answer of GET /v1/tool-rounds.
type roundList struct {
	Data   []loop.RoundLog `json:"data"`
	Object string          `json:"object"`
}
