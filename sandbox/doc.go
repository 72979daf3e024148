// Package sandbox runs untrusted Python and JavaScript programs inside
// wazero, the pure-Go WebAssembly runtime, and nothing else.
//
// Python is CPython 3.12 compiled for WASI (python.wasm); JavaScript is
// QuickJS-NG compiled as a WASI reactor (quickjs.wasm, driven through
// sandbox/quickjs). A runtime is loaded on its first use (or at once after
// Preload) and compiled once per process, with the machine code cached on
// disk so a restart does not pay the seconds-long compilation again.
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
//     copies; freeing it returns the pages to the system at once. A new
//     instance's memory starts as a private (copy-on-write) mapping of its
//     language's snapshot image, so it owns only the pages it writes; an
//     image that cannot be mapped is copied, and one that cannot be read in
//     full fails the instance's start: no guest runs on half an image.
//     Unmapped memory faults, so no memory is freed under running code: Close
//     waits for the runs in progress before it closes the runtime (which
//     frees every instance), and sandbox/quickjs never returns into a module
//     closed while a host function ran.
//   - A wall-clock deadline closes the module (WithCloseOnContextDone); host
//     calls the guest may block in (stdin, sleep) wake up on it too.
//   - stdout and stderr are capped while the guest writes, never after.
//   - A concurrency cap with a bounded queue; a full queue answers ErrBusy.
//
// A Python instance is restored, not booted (pysnapshot.go): one template
// interpreter boots, imports the common standard-library modules, warms up,
// and parks inside a host call at exit; its memory becomes the image every
// instance maps, and the host drives a restored interpreter with three calls
// from C (read and compile the program, run it, report and os._exit), so the
// program's stack is its own and finalization never sits on the critical
// path. Instances are started ahead of time into warm pools sized by memory
// and by the recent demand (pool.go).
package sandbox
