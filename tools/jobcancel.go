package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
)

// cancel_job cancels one of the caller's own background jobs (CancelJob):
// a queued one ends without running, a running one is stopped wherever it
// runs. It is a builtin of every deployment beside wait_job, so a hosted
// /v1 loop's model can give up on a job it started; DELETE
// /tool-executions/{id}/job and `toolhost jobs cancel` do the same.

// CancelJobTool is the builtin that cancels a background job.
const CancelJobTool = "cancel_job"

// Codes of cancel_job.
const (
	// CodeJobFinished: the job had already ended; nothing was cancelled.
	CodeJobFinished = "job_finished"
)

type cancelJob struct{ e *Executor }

// addCancelJob publishes cancel_job beside the tools NewExecutor got.
func (e *Executor) addCancelJob() error {
	t := &cancelJob{e: e}
	if err := e.catalog.Add(t.Spec()); err != nil {
		return err
	}
	ent, err := newEntry(t)
	if err != nil {
		return err
	}
	e.tools[ent.spec.Name] = ent
	return nil
}

func (*cancelJob) Spec() catalog.Spec {
	return catalog.Spec{
		Name:    CancelJobTool,
		Version: "1.0.0",
		Title:   catalog.Text{ZH: "取消后台任务", EN: "Cancel a background job"},
		Description: catalog.Text{
			ZH: "取消你自己的一次转入后台的工具调用（回执中的 execution_id）：排队中的任务不再运行，运行中的任务被停止。返回取消后的状态；已结束的任务无法取消。",
			EN: "Cancels one of your own tool calls that went to the background (the execution_id of its receipt): a queued job never runs, a running one is stopped. Answers with its status after the cancellation; a job that has already ended cannot be cancelled.",
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "execution_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "the execution_id of the job's receipt"}
  },
  "required": ["execution_id"],
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "execution_id": {"type": "string"},
    "tool_name": {"type": "string"},
    "status": {"type": "string", "enum": ["queued", "running", "success", "error", "denied", "timeout", "uncertain", "blocked"], "description": "the status after the cancellation: error (cancelled) for a queued job; running while a running one stops"},
    "stopping": {"type": "boolean", "description": "the job was running: it is being stopped, and its status changes once it has"}
  },
  "required": ["execution_id", "tool_name", "status", "stopping"],
  "additionalProperties": false
}`),
		InputZH: catalog.SchemaZH{
			"/properties/execution_id": "任务回执中的 execution_id",
		},
		OutputZH: catalog.SchemaZH{
			"/properties/status":   "取消后的状态：排队中的任务为 error（已取消）；运行中的任务在停止前仍为 running",
			"/properties/stopping": "任务正在运行：正在停止，停止后状态随之改变",
		},
		Annotations: catalog.Annotations{Idempotent: true},
		SideEffect:  catalog.SideEffectNone,
		ReplaySafe:  true,
	}
}

// CancelJobOutput is cancel_job's structured content.
type CancelJobOutput struct {
	ExecutionID string         `json:"execution_id"`
	ToolName    string         `json:"tool_name"`
	Status      journal.Status `json:"status"`
	Stopping    bool           `json:"stopping"`
}

func (c *cancelJob) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	var in struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	rec, err := c.e.CancelJob(ctx, c.e.Account(inv.Caller), in.ExecutionID)
	switch {
	case errors.Is(err, ErrJobNotFound):
		return nil, Errorf(CodeNotFound, "no background job of yours has execution id %q; use the execution_id of a receipt you were given", in.ExecutionID)
	case errors.Is(err, ErrJobFinished):
		return nil, Errorf(CodeJobFinished, "the job of execution %s has already ended (%s); read its result with %s", in.ExecutionID, rec.Status, WaitJobTool)
	case err != nil:
		return nil, journalReadError(in.ExecutionID, err)
	}
	out := CancelJobOutput{ExecutionID: rec.ID, ToolName: rec.ToolName, Status: rec.Status, Stopping: rec.Lifecycle != journal.Finished}
	text := fmt.Sprintf("The job of execution %s (%s) was cancelled before it ran.", rec.ID, rec.ToolName)
	if out.Stopping {
		text = fmt.Sprintf("The job of execution %s (%s) was running and is being stopped.", rec.ID, rec.ToolName)
	}
	if inv.Ref.Lang != catalog.English {
		text = fmt.Sprintf("执行 %s（%s）的任务已在运行前取消。", rec.ID, rec.ToolName)
		if out.Stopping {
			text = fmt.Sprintf("执行 %s（%s）的任务正在运行，正在停止。", rec.ID, rec.ToolName)
		}
	}
	return &Result{Structured: out, Text: text, Summary: fmt.Sprintf("%s %s", rec.ID, rec.Status)}, nil
}
