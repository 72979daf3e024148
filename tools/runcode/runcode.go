package runcode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// PaidUnit is what run_code bills: started seconds of run time.
const PaidUnit = "run_second"

// Input limits (the tool contract).
const (
	MaxCodeBytes   = 100 << 10
	MaxStdinBytes  = 1 << 20
	MaxFiles       = 20
	MaxFilesBytes  = 10 << 20
	DefaultTimeout = 10 * time.Second
)

// Error codes of run_code, besides the pipeline's own.
const (
	CodeInvalidInput       = "invalid_input"
	CodeCodeTooLarge       = "code_too_large"
	CodeRuntimeUnavailable = "runtime_unavailable"
	CodeRuntimeLoading     = "runtime_loading"
	CodeTimeout            = "timeout"
	CodeMemoryExceeded     = "memory_exceeded"
	CodeBusy               = "busy"
	CodeInternal           = "internal_error"
)

// Tool is run_code over one sandbox.
type Tool struct {
	sb  *sandbox.Sandbox
	tel instruments
	// longest is the most timeout_ms of a deferred run (a background
	// job); an inline run's is sandbox.MaxTimeout.
	longest time.Duration
}

// DefaultDeferredTimeout is the longest run of a deferred call
// (WithDeferredLimit).
const DefaultDeferredTimeout = 10 * time.Minute

// WithDeferredLimit sets the longest run of a deferred call (timeout_ms up
// to d; the config's jobs.timeout): minutes, where an inline run has
// sandbox.MaxTimeout. Memory and the other limits stay as they are.
func (t *Tool) WithDeferredLimit(d time.Duration) *Tool {
	if d > 0 {
		t.longest = min(d, sandbox.MaxLongTimeout)
	}
	return t
}

// New returns run_code running programs in sb. The caller owns sb and
// closes it after the tool is no longer used.
func New(sb *sandbox.Sandbox) *Tool {
	return &Tool{sb: sb, tel: newInstruments(nil, nil), longest: DefaultDeferredTimeout}
}

// Spec is the static contract of run_code.
func (t *Tool) Spec() catalog.Spec {
	cfg := t.sb.Config()
	return catalog.Spec{
		Name:    "run_code",
		Version: "1.0.0",
		// A long program may run as a background job when its caller
		// asks (async_job); inline stays the default.
		Async: catalog.DeferredOK,
		Title: catalog.Text{ZH: "运行代码", EN: "Run code"},
		Description: catalog.Text{
			ZH: fmt.Sprintf("在隔离沙箱中运行 Python 3.12（默认，仅标准库：json、math、statistics、decimal、fractions、re、datetime、csv、sqlite3 等；没有 numpy 等第三方包）或 JavaScript（QuickJS，返回最后一个表达式的值，console.log 输出到 stdout）。没有网络，没有主机文件；工作目录是私有的临时目录，files 中的输入文件放在其中，程序写到 out/ 下的文件会返回。限制：内存 %d MiB，超时 timeout_ms（默认 10000，最多 60000；作为后台作业 async_job 运行时可达服务器的后台上限，数分钟），stdout/stderr 各保留前 %d KiB。异常不是工具错误：exit_code 非 0，traceback 在 stderr 中。按开始的运行秒数计费。", cfg.MemoryLimitMiB, cfg.StdoutLimit>>10),
			EN: fmt.Sprintf("Runs Python 3.12 (default; standard library only: json, math, statistics, decimal, fractions, re, datetime, csv, sqlite3 and more; no third-party packages such as numpy) or JavaScript (QuickJS; the value of the last expression is returned, console.log goes to stdout) in an isolated sandbox. No network and no host files: the working directory is a private temporary one holding the input files, and files the program writes under out/ are returned. Limits: %d MiB of memory, timeout_ms (default 10000, at most 60000; up to the server's deferred limit, minutes, when the call runs as a background job, async_job), the first %d KiB of stdout and of stderr are kept. An exception is not a tool error: exit_code is non-zero and the traceback is in stderr. Billed per started second of run time.", cfg.MemoryLimitMiB, cfg.StdoutLimit>>10),
		},
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "minLength": 1, "description": "the program (at most 100 KB); Python runs as a script, JavaScript as a global script where top-level await works"},
    "language": {"type": "string", "enum": ["python", "javascript"], "default": "python"},
    "stdin": {"type": "string", "description": "text the program reads from standard input (at most 1 MiB; Python only)"},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 86400000, "default": 10000, "description": "wall-clock limit of the run: at most 60000, or the server's deferred limit (minutes) when the call runs as a background job"},
    "files": {
      "type": "array",
      "description": "input files placed in the working directory (at most 20, 10 MiB in all); JavaScript sees them as the global object files (name -> text)",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 255, "description": "relative path such as data.csv or in/a.txt"},
          "content": {"type": "string"},
          "encoding": {"type": "string", "enum": ["text", "base64"], "default": "text"}
        },
        "required": ["name", "content"],
        "additionalProperties": false
      }
    }
  },
  "required": ["code"],
  "additionalProperties": false
}`),
		Output: json.RawMessage(`{
  "type": "object",
  "properties": {
    "language": {"type": "string", "enum": ["python", "javascript"]},
    "exit_code": {"type": "integer", "description": "0 on success; 1 after an uncaught exception; -1 when stopped by the deadline"},
    "stdout": {"type": "string"},
    "stderr": {"type": "string"},
    "stdout_truncated": {"type": "boolean"},
    "stderr_truncated": {"type": "boolean"},
    "result": {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}], "description": "JavaScript: the last expression's value as JSON (null when undefined, a function or a symbol; null with a note in stderr when JSON cannot represent it, such as a BigInt or a cycle; over 1 MiB of JSON, the error result_too_large); Python: null"},
    "duration_ms": {"type": "integer"},
    "timed_out": {"type": "boolean"},
    "memory_exceeded": {"type": "boolean"},
    "files": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "size": {"type": "integer"},
          "encoding": {"type": "string", "enum": ["text", "base64"]},
          "content": {"type": "string"},
          "truncated": {"type": "boolean", "description": "content holds only the first bytes (or none) of the file"}
        },
        "required": ["name", "size", "truncated"],
        "additionalProperties": false
      }
    }
  },
  "required": ["language", "exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "result", "duration_ms", "timed_out", "memory_exceeded", "files"],
  "additionalProperties": false
}`),
		InputZH: catalog.SchemaZH{
			"/properties/code":                        "程序（最多 100 KB）；Python 作为脚本运行，JavaScript 作为全局脚本运行，可以在顶层使用 await",
			"/properties/stdin":                       "程序从标准输入读取的文本（最多 1 MiB；仅 Python）",
			"/properties/timeout_ms":                  "运行的挂钟时间上限：最多 60000；作为后台作业运行时可达服务器的后台上限（数分钟）",
			"/properties/files":                       "放在工作目录中的输入文件（最多 20 个，共 10 MiB）；JavaScript 把它们看作全局对象 files（文件名 -> 文本）",
			"/properties/files/items/properties/name": "相对路径，如 data.csv 或 in/a.txt",
		},
		OutputZH: catalog.SchemaZH{
			"/properties/exit_code":                        "成功为 0；未捕获的异常之后为 1；被截止时间停止时为 -1",
			"/properties/result":                           "JavaScript：最后一个表达式的值，以 JSON 表示（undefined、函数或 symbol 为 null；JSON 无法表示时（如 BigInt 或循环引用）为 null，并在 stderr 中说明；JSON 超过 1 MiB 时为错误 result_too_large）；Python：null",
			"/properties/files/items/properties/truncated": "content 只包含文件的前若干字节（或没有内容）",
		},
		Annotations: catalog.Annotations{ReadOnly: true, OpenWorld: false, Idempotent: false},
		SideEffect:  catalog.SideEffectSandbox,
		ReplaySafe:  true,
		PaidUnit:    PaidUnit,
	}
}

type input struct {
	Code      string      `json:"code"`
	Language  string      `json:"language"`
	Stdin     string      `json:"stdin"`
	TimeoutMS int         `json:"timeout_ms"`
	Files     []inputFile `json:"files"`
}

type inputFile struct {
	Name     string `json:"name"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// Output is run_code's structured result.
type Output struct {
	Language        string          `json:"language"`
	ExitCode        int             `json:"exit_code"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`
	Result          json.RawMessage `json:"result"`
	DurationMS      int64           `json:"duration_ms"`
	TimedOut        bool            `json:"timed_out"`
	MemoryExceeded  bool            `json:"memory_exceeded"`
	Files           []OutputFile    `json:"files"`
}

// OutputFile is a file the program wrote under out/.
type OutputFile struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	Encoding  string `json:"encoding,omitempty"`
	Content   string `json:"content,omitempty"`
	Truncated bool   `json:"truncated"`
}

func (t *Tool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in input
	if err := inv.Decode(&in); err != nil {
		return nil, tools.Errorf(CodeInvalidInput, "%v", err)
	}
	longest := sandbox.MaxTimeout
	if inv.Deferred {
		longest = max(t.longest, sandbox.MaxTimeout)
	}
	req, err := request(in, longest)
	if err != nil {
		return nil, err
	}
	// What is left of the key's monthly cap bounds the run: one unit is one
	// started second.
	capped := false
	if b := inv.UnitBudget; b > 0 && time.Duration(b*float64(time.Second)) < req.Timeout {
		req.Timeout, capped = time.Duration(b*float64(time.Second)), true
	}
	// An authenticated account gets its share of the sandbox, not all of
	// it (development mode and the command line have one user).
	if inv.Caller.KeyID != "" {
		req.Account = inv.Caller.AccountID
	}
	started := time.Now()
	req.Progress = func(elapsed time.Duration, msg string) {
		// Progress is the elapsed time in seconds: it only grows, as MCP
		// wants, and the total is unknown while queued.
		inv.Progress(math.Round(time.Since(started).Seconds()*10)/10, 0, msg)
	}
	// A run waiting for a slot is queued in the journal.
	req.OnQueue = inv.Queued
	res, err := t.sb.Run(ctx, req)
	t.tel.record(ctx, req.Language, started, res, err)
	if err != nil {
		return nil, runError(ctx, err)
	}
	out := render(res)
	units := math.Max(1, math.Ceil(res.Duration.Seconds()))
	// A failed run carries its output as the error's details.
	switch {
	case res.TimedOut && capped:
		return nil, &tools.Error{
			Code:    CodeTimeout,
			Message: fmt.Sprintf("the %s program was stopped after %d ms: that is all the run time left under this API key's monthly cap", res.Language, req.Timeout.Milliseconds()),
			Units:   units, Details: out,
		}
	case res.TimedOut:
		return nil, &tools.Error{
			Code:    CodeTimeout,
			Message: fmt.Sprintf("the %s program did not finish within %d ms and was stopped; make it faster or raise timeout_ms (at most 60000)", res.Language, req.Timeout.Milliseconds()),
			Units:   units, Details: out,
		}
	case res.MemoryExceeded:
		return nil, &tools.Error{
			Code:    CodeMemoryExceeded,
			Message: fmt.Sprintf("the %s program ran out of memory (limit %d MiB) and was stopped; process the data in smaller pieces", res.Language, t.sb.Config().MemoryLimitMiB),
			Units:   units, Details: out,
		}
	case res.ValueTooLarge:
		// The same code the pipeline gives a result over its own cap: a
		// value too large to return is never a silent null.
		return nil, &tools.Error{
			Code:    tools.CodeResultTooLarge,
			Message: fmt.Sprintf("the javascript program's last value is %d bytes of JSON, more than the %d run_code returns; end with a smaller value (a summary, a slice) or none", res.ValueBytes, sandbox.MaxValue),
			Units:   units, Details: out,
		}
	}
	return &tools.Result{
		Structured: out,
		Text:       text(out),
		Summary:    fmt.Sprintf("%s exit %d, %d ms", out.Language, out.ExitCode, out.DurationMS),
		Units:      units,
		// The program's output may echo anything it read or was given
		// (a page fetched earlier, a file): data, not instructions.
		Untrusted: true,
	}, nil
}

// MaxUnits is the most a call can bill: its timeout in started seconds
// (the monthly cap holds that much while it runs).
func (t *Tool) MaxUnits(inv *tools.Invocation) float64 {
	var in input
	if inv.Decode(&in) != nil {
		return 1
	}
	timeout := DefaultTimeout
	if in.TimeoutMS > 0 {
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	return math.Max(1, math.Ceil(timeout.Seconds()))
}

// request checks the input's sizes and builds the sandbox request.
func request(in input, longest time.Duration) (sandbox.Request, error) {
	if len(in.Code) > MaxCodeBytes {
		return sandbox.Request{}, tools.Errorf(CodeCodeTooLarge, "code is %d bytes, more than the %d allowed; put data in files instead of the code", len(in.Code), MaxCodeBytes)
	}
	if strings.TrimSpace(in.Code) == "" {
		return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "code is empty")
	}
	lang := sandbox.Language(in.Language)
	if lang == "" {
		lang = sandbox.Python
	}
	if lang != sandbox.Python && lang != sandbox.JavaScript {
		return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "language %q is not supported: use python or javascript", in.Language)
	}
	if len(in.Stdin) > MaxStdinBytes {
		return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "stdin is %d bytes, more than the %d allowed", len(in.Stdin), MaxStdinBytes)
	}
	timeout := DefaultTimeout
	if in.TimeoutMS != 0 {
		if in.TimeoutMS < 1 || int64(in.TimeoutMS) > longest.Milliseconds() {
			if longest == sandbox.MaxTimeout {
				return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "timeout_ms must be between 1 and %d; a longer run must be a background job (async_job)", sandbox.MaxTimeout.Milliseconds())
			}
			return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "timeout_ms must be between 1 and %d in a background job", longest.Milliseconds())
		}
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	if len(in.Files) > MaxFiles {
		return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "%d files given, at most %d are allowed", len(in.Files), MaxFiles)
	}
	req := sandbox.Request{Language: lang, Code: in.Code, Stdin: []byte(in.Stdin), Timeout: timeout, LongRun: timeout > sandbox.MaxTimeout}
	seen := map[string]bool{}
	total := 0
	for _, f := range in.Files {
		if err := sandbox.ValidFileName(f.Name); err != nil {
			return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "%v", err)
		}
		if seen[f.Name] {
			return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "file %q is given twice", f.Name)
		}
		seen[f.Name] = true
		var data []byte
		switch f.Encoding {
		case "", "text":
			data = []byte(f.Content)
		case "base64":
			b, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil {
				return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "file %q is not valid base64: %v", f.Name, err)
			}
			data = b
		default:
			return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "file %q: encoding must be text or base64", f.Name)
		}
		total += len(data)
		if total > MaxFilesBytes {
			return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "the files hold more than %d bytes in all", MaxFilesBytes)
		}
		req.Files = append(req.Files, sandbox.File{Name: f.Name, Data: data})
	}
	// A directory and a file of the same name cannot both exist.
	for name := range seen {
		for dir := name; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if seen[dir] {
				return sandbox.Request{}, tools.Errorf(CodeInvalidInput, "file %q is also used as the directory of %q", dir, name)
			}
		}
	}
	return req, nil
}

// runtimeLoadingRetry is the retry_after of runtime_loading: a compile that
// outlasted a call's deadline still has a while to go.
const runtimeLoadingRetry = 10 * time.Second

// runError maps the sandbox's refusals to stable codes.
func runError(ctx context.Context, err error) error {
	var loading *sandbox.LoadingError
	switch {
	case errors.As(err, &loading) && errors.Is(err, context.DeadlineExceeded):
		// Not a queue: the runtime compiles once (from an empty cache,
		// seconds idle, minutes on a loaded machine) and keeps compiling
		// for the calls after this one.
		return &tools.Error{
			Code: CodeRuntimeLoading,
			Message: fmt.Sprintf("the %s runtime was still loading when this call's deadline ended (the call waited %.0f s for it and never queued for a run slot); compiling it from an empty cache takes seconds, minutes on a busy machine, and happens once: try again shortly",
				loading.Language, loading.Waited.Seconds()),
			RetryAfter: runtimeLoadingRetry,
		}
	case errors.Is(err, sandbox.ErrAccountBusy):
		return &tools.Error{Code: CodeBusy, Message: "this API key's account already holds its share of the run_code slots and queue; wait for its runs to finish", RetryAfter: time.Second}
	case errors.Is(err, sandbox.ErrBusy):
		return &tools.Error{Code: CodeBusy, Message: "every run_code slot is taken and the queue is full; try again shortly", RetryAfter: time.Second}
	case errors.Is(err, sandbox.ErrUnavailable):
		return tools.Errorf(CodeRuntimeUnavailable, "%s", strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()+": "))
	case errors.Is(err, sandbox.ErrInvalid):
		return tools.Errorf(CodeInvalidInput, "%s", strings.TrimPrefix(err.Error(), sandbox.ErrInvalid.Error()+": "))
	case errors.Is(err, sandbox.ErrClosed):
		return tools.Errorf(CodeRuntimeUnavailable, "the sandbox is shutting down; try again on another server")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The runtime was loaded: the deadline ended behind other runs.
		return tools.Errorf(CodeTimeout, "run_code waited too long for a free slot; try again later")
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("run_code: %w", err)
}

func render(res *sandbox.Result) Output {
	out := Output{
		Language:        string(res.Language),
		ExitCode:        res.ExitCode,
		Stdout:          string(res.Stdout),
		Stderr:          string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated,
		StderrTruncated: res.StderrTruncated,
		Result:          res.Value,
		DurationMS:      res.Duration.Milliseconds(),
		TimedOut:        res.TimedOut,
		MemoryExceeded:  res.MemoryExceeded,
		Files:           []OutputFile{},
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	for _, f := range res.Files {
		of := OutputFile{Name: f.Name, Size: f.Size, Truncated: f.Truncated}
		if f.Data != nil || f.Size == 0 {
			if textual(f.Data) {
				of.Encoding, of.Content = "text", string(f.Data)
			} else {
				of.Encoding, of.Content = "base64", base64.StdEncoding.EncodeToString(f.Data)
			}
		}
		out.Files = append(out.Files, of)
	}
	return out
}

// textual reports whether a file is returned as text: valid UTF-8 without
// control characters other than tab, newline and carriage return. JSON
// escapes each other control byte in six (a 64 KiB file of NUL bytes became
// 384 KiB and failed with result_too_large); base64 costs a third more.
func textual(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return true
}

func text(out Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s exited with code %d after %d ms", out.Language, out.ExitCode, out.DurationMS)
	section := func(name, s string, truncated bool) {
		if s == "" {
			return
		}
		fmt.Fprintf(&b, "\n--- %s", name)
		if truncated {
			b.WriteString(" (truncated)")
		}
		b.WriteString(" ---\n")
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	section("stdout", out.Stdout, out.StdoutTruncated)
	section("stderr", out.Stderr, out.StderrTruncated)
	if out.Language == string(sandbox.JavaScript) && string(out.Result) != "null" {
		fmt.Fprintf(&b, "\n--- result ---\n%s\n", out.Result)
	}
	for _, f := range out.Files {
		fmt.Fprintf(&b, "\n--- file %s (%d bytes", f.Name, f.Size)
		if f.Truncated {
			b.WriteString(", truncated")
		}
		b.WriteString(") ---\n")
		if f.Encoding == "text" {
			b.WriteString(f.Content)
		} else if f.Content != "" {
			b.WriteString("[binary, base64 in the structured result]")
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
