package loop

import (
	"context"
	"time"
)

// RoundTag is the request-log tag of every upstream call of a hosted loop.
const RoundTag = "v1_tool_round"

// maxMetadataKeys: a request whose metadata already has this many keys gets
// no tag (the seed's rule; metadata has room for 8 keys in the console).
const maxMetadataKeys = 8

// RoundLog is the request-log record of one upstream call of a run.
type RoundLog struct {
	Time         time.Time         `json:"time"`
	RequestID    string            `json:"request_id"`
	RunID        string            `json:"run_id"`
	Round        int               `json:"round"`
	Final        bool              `json:"final"`
	Route        string            `json:"route"`
	Model        string            `json:"model"`
	UpstreamID   string            `json:"upstream_id"`
	SessionID    string            `json:"session_id,omitempty"`
	AccountID    string            `json:"account_id,omitempty"`
	KeyID        string            `json:"key_id,omitempty"`
	Tag          string            `json:"tag,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	InputTokens  int64             `json:"input_tokens"`
	OutputTokens int64             `json:"output_tokens"`
	CostQuota    int64             `json:"cost_quota"`
	UpstreamMS   int64             `json:"upstream_ms"`
	ToolsMS      int64             `json:"tools_ms"`
	// ResultBytes are the bytes of the round's tool results fed to the
	// model; StoppedBy, on a final round, the bound that made it final.
	ResultBytes int64          `json:"result_bytes"`
	StoppedBy   StopReason     `json:"stopped_by,omitempty"`
	ToolCalls   []RoundLogCall `json:"tool_calls"`
}

// RoundLogCall is one hosted call in a round record.
type RoundLogCall struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      Status `json:"status"`
	ExecutionID string `json:"execution_id,omitempty"`
	MS          int64  `json:"ms"`
}

// RoundRecorder stores round records.
type RoundRecorder interface {
	RecordRound(ctx context.Context, rec RoundLog)
}

func (r *Runner) record(ctx context.Context, run *Run, res *Result, rr RoundResult) {
	rec := RoundLog{
		Time:         time.Now().UTC(),
		RequestID:    run.Caller.RequestID,
		RunID:        res.RunID,
		Round:        rr.Round,
		Final:        rr.Final,
		Route:        run.Route.Name,
		Model:        run.Request.Model,
		UpstreamID:   rr.Response.ID,
		SessionID:    run.Caller.SessionID,
		AccountID:    run.Caller.AccountID,
		KeyID:        run.Caller.KeyID,
		InputTokens:  rr.Usage.InputTokens,
		OutputTokens: rr.Usage.OutputTokens,
		CostQuota:    rr.Cost,
		UpstreamMS:   rr.Upstream.Milliseconds(),
		ToolsMS:      rr.Tools.Milliseconds(),
		ResultBytes:  rr.ResultBytes,
		StoppedBy:    rr.StoppedBy,
		ToolCalls:    make([]RoundLogCall, 0, len(rr.Calls)),
	}
	md := make(map[string]string, len(run.Caller.Metadata)+1)
	for k, v := range run.Caller.Metadata {
		md[k] = v
	}
	if len(run.Caller.Metadata) < maxMetadataKeys {
		rec.Tag = RoundTag
		md["tag"] = RoundTag
	}
	rec.Metadata = md
	for _, c := range rr.Calls {
		rec.ToolCalls = append(rec.ToolCalls, RoundLogCall{ID: c.ID, Name: c.Name, Status: c.Status, ExecutionID: c.ExecutionID, MS: c.MS()})
	}
	r.logger.InfoContext(ctx, "hosted round", "kind", RoundTag, "request_id", rec.RequestID, "run_id", rec.RunID, "round", rec.Round,
		"final", rec.Final, "route", rec.Route, "model", rec.Model, "calls", len(rec.ToolCalls), "cost_quota", rec.CostQuota,
		"upstream_ms", rec.UpstreamMS, "tools_ms", rec.ToolsMS, "result_bytes", rec.ResultBytes, "stopped_by", rec.StoppedBy)
	if r.rounds != nil {
		r.rounds.RecordRound(ctx, rec)
	}
}
