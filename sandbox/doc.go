// Package sandbox runs untrusted Python and JavaScript programs inside
// wazero, the pure-Go WebAssembly runtime, and nothing else.
//
// Python is CPython 3.12 compiled for WASI (python.wasm); JavaScript is
// QuickJS-NG compiled as a WASI reactor (quickjs.wasm, driven through
// sandbox/quickjs). Both are compiled once per process, with the machine code
// cached on disk so a restart does not pay the seconds-long compilation again.
//
// Invariants every run keeps:
//   - A fresh WebAssembly instance per run; a pooled instance is used once and
//     thrown away, so nothing leaks between runs or between accounts.
//   - No network (no sockets are handed to the guest), no host environment
//     variables, no host arguments, no host files: the guest sees a private,
//     empty working directory mounted at "/", with the run's input files in
//     it. Symbolic and hard links are refused there, because a relative
//     symlink would otherwise be followed by the host outside the directory.
//     Bytes written to the directory are counted against a quota.
//   - Linear memory is capped (WithMemoryLimitPages) and, on Linux, backed by
//     its own mmap so a growing guest does not make the Go heap balloon with
//     copies; freeing it returns the pages to the system at once.
//   - A wall-clock deadline closes the module (WithCloseOnContextDone); host
//     calls the guest may block in (stdin, sleep) wake up on it too.
//   - stdout and stderr are capped while the guest writes, never after.
//   - A concurrency cap with a bounded queue; a full queue answers ErrBusy.
//
// Python instances are started ahead of time (the warm pool): the interpreter
// boots, imports the common standard-library modules, compiles a warm-up
// snippet and then blocks reading its program from stdin. A run hands it a
// header and the program, and the bootstrap leaves through os._exit right
// after the user's code, so the interpreter's finalization never sits on the
// critical path.
package sandbox
