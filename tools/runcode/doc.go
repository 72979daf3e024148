// Package runcode provides the run_code tool: a model's Python or JavaScript
// program, run in the wazero sandbox (package sandbox) with no network, no
// host files, capped memory, output and time, and a private working
// directory for input and output files.
//
// A program that fails (an exception, a JavaScript throw, a non-zero exit) is
// a normal result with exit_code != 0 and the traceback in stderr: the model
// wrote the program and must see why it failed. Tool errors are for the
// sandbox's own verdicts: timeout, memory_exceeded, busy, code_too_large,
// invalid_input, runtime_unavailable and internal_error. timeout and
// memory_exceeded carry the partial output in their details.
//
// run_code bills started seconds of run time (PaidUnit "run_second"): a run
// of 20 ms is one unit, one of 1.2 s two. Time spent queued is not billed.
package runcode
