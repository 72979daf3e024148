// Package quickjs hosts the QuickJS-NG JavaScript engine (quickjs.wasm from
// the quickjs-wasi package, a WASI reactor) inside wazero, and runs one
// program per instance.
//
// The reactor exports a small C interface (qjs_init, qjs_eval, qjs_call,
// qjs_execute_pending_job, ...) in which every JavaScript value crosses the
// boundary as a pointer to a heap-allocated JSValue "box" in linear memory;
// whoever receives a box frees it with qjs_free_value (the boxes the engine
// passes to host_call are the exception: the trampoline frees them). The
// engine calls back into the host through the env.host_* imports that
// Compile defines: host_call carries console output, host_interrupt is the
// soft deadline, host_promise_rejection reports unhandled rejections; module
// loading is refused, so `import` cannot reach anything, and the time zone is
// UTC.
//
// What a program sees: the ECMAScript built-ins of QuickJS-NG (Date on the
// real clock, Math.random seeded from crypto/rand per instance), a console
// whose log/info/debug go to Options.Stdout and error/warn to Options.Stderr,
// setTimeout/setInterval on real time, and top-level await. There is no
// require, process, fetch, std or os module, no file system, no network and
// no environment. The value of the last expression comes back as JSON (a
// promise is awaited first): null when it has no JSON text (undefined, a
// function, a symbol); never a silent null otherwise, since a value over
// Options.MaxValue is Result.ValueTooLarge with its size, and one JSON
// cannot represent (a BigInt, a cycle, a throwing toJSON, nesting deeper
// than the 997 levels a tool result carries within the 1000 an MCP
// client reads) Result.ValueError with the reason.
// The nesting is checked before the value is serialized (the engine's
// JSON.stringify takes time quadratic in the nesting), so a value nested a
// million levels deep is noted, not timed out. An uncaught exception comes back as text with its stack,
// in the Result, not as a Go error; the stack shows the program's frames and
// none of the prelude's.
//
// CallFunction runs a tool definition's script: the body of a function of
// args, compiled on its own so its line numbers are its own (after a check,
// compiled but not run, that it is one function body: one that closes its
// function early is a SyntaxError), and called by the host through a
// prelude helper. The prelude's helpers (reading the
// last value, describing an exception, the timers' loop, calling a script)
// are returned to the host and never put on the global object, so no
// program can reach, call or replace them.
//
// Limits: Options.MemoryLimit caps the engine's heap (an allocation beyond it
// throws an uncatchable "InternalError: out of memory", reported as
// ErrMemory); the page cap of the caller's runtime stays the hard ceiling.
// Options.MaxStack turns deep recursion into a RangeError instead of a trap.
// Eval watches its context twice. The engine's interrupt hook polls a
// context that ends a little before the caller's (the soft stop: a clean
// "InternalError: interrupted" that no catch can swallow). Built-ins that run
// long without polling (JSON.stringify of a program's own deeply nested
// value, BigInt arithmetic on huge numbers) are only stopped when the caller's runtime
// closes the module at the context's end
// (wazero.RuntimeConfig.WithCloseOnContextDone); both are ErrInterrupted.
// When that close comes while console output or a promise rejection is in
// the host, the host unwinds the program's call instead of returning into a
// module whose memory the runtime has just freed.
//
// Compile also runs the engine's start-up once in a template instance and
// keeps a copy of its linear memory; Instantiate copies it into each fresh
// instance instead of running qjs_init and the prelude again, then applies
// the per-instance limits and seeds. An instance is meant to run one program
// and be discarded. A VM is not safe for concurrent use; a Module is.
package quickjs
