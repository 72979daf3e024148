// Package runcode provides the run_code tool: a model's Python or JavaScript
// program, run in the wazero sandbox (package sandbox) with no network, no
// host files, capped memory, output and time, and a private working
// directory for input and output files.
//
// A program that fails (an exception, a JavaScript throw, a non-zero exit) is
// a normal result with exit_code != 0 and the traceback in stderr: the model
// wrote the program and must see why it failed. Tool errors are for the
// sandbox's own verdicts: timeout, memory_exceeded, busy, code_too_large,
// invalid_input, runtime_unavailable, runtime_loading (the call's deadline
// ended while the runtime still compiled, which is not queueing) and
// internal_error, and result_too_large for a JavaScript last value over the
// sandbox's 1 MiB of JSON. timeout, memory_exceeded and result_too_large carry the output in
// their details. A last value JSON cannot represent (a BigInt, a cycle) is
// a null result with a note in stderr, the exit code unchanged.
//
// Scripts runs the script handlers of tool definitions in the same
// JavaScript sandbox, as the body of a function of args called by the
// sandbox itself (sandbox.Request.Args): a throw is script_error with the
// script's own line numbers, and so is a script that closes its function
// early to run code at the top level (a SyntaxError, nothing of it run); a
// result over ScriptMaxResult bytes of JSON is result_too_large.
//
// run_code bills started seconds of run time (PaidUnit "run_second"): a run
// of 20 ms is one unit, one of 1.2 s two. Time spent queued is not billed.
package runcode
