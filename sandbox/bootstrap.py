# The run_code Python bootstrap. It runs before the user's program exists:
# it imports the common standard-library modules and compiles a warm-up
# snippet (inside the sandbox both cost hundreds of milliseconds, so they must
# not be paid per run). The host snapshots the interpreter at that point (see
# the end of this file and sandbox/pysnapshot.go) and drives every restored
# copy with three calls from C, so no frame of this file sits below the
# program's: _prepare reads "<length>\n" and the program from stdin (the rest
# of stdin is the program's own) and returns the program compiled into a
# function; the host calls it; _finish flushes and leaves through os._exit
# with the exit code, plus EXIT_MEMORY when a MemoryError ended the program,
# skipping the interpreter's finalization. The program's module body is
# wrapped in try/except so an exception it raises is reported by _caught
# without unwinding into the host. sys.__excepthook__ prints tracebacks the
# way python itself does (C code, at most sys.tracebacklimit frames), fast
# even after a 100 000-deep recursion.
#
# Nothing here is a secret or a channel the host trusts: a program reaches
# this file's globals by introspection whatever is done (exit's __globals__,
# gc.get_objects, frames), so the host learns that a run ended from the
# proc_exit of its own calls, never from what the guest writes. What a
# program can change here is its own run's report, which it decides anyway
# (sys.exit, raise MemoryError).
import sys, os, builtins, traceback, linecache, select, types, ast
import json, math, re, datetime, time, collections, itertools, functools
import statistics, decimal, fractions, random, string, csv, io, base64

# -S skips the site module (its cost is per boot); keep the exit()/quit()
# builtins it would have added, since programs use them.
def _quit(code=None):
    raise SystemExit(code)


builtins.exit = builtins.quit = _quit


# CPython sleeps with an absolute-time clock subscription, which wazero's
# poll_oneoff refuses (ENOTSUP); a relative one, as select() makes, works and
# ends at the run's deadline.
def _sleep(secs):
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    end = time.monotonic() + secs
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        select.select([], [], [], left)


time.sleep = _sleep

exec(compile("def _w(n):\n    return [i * i for i in range(n) if i % 2]\n_w(8)\n", "<warm-up>", "exec"), {})


def _report(e):
    # Print e as python would, without this file's frames: the traceback
    # starts at the program's own code (none for a SyntaxError).
    try:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "main.py":
            tb = tb.tb_next
        e = e.with_traceback(tb)
        sys.__excepthook__(type(e), e, tb)
    except BaseException:
        pass


_run = {"status": b"ok", "code": 0}

# Added to the exit code when a MemoryError ended the program (the host's
# memory-limit verdict); above any code a program exits with by accident.
EXIT_MEMORY = 1 << 16


def _caught(e):
    # The program raised e (its module body's try/except calls this).
    if isinstance(e, SystemExit):
        if e.code is None:
            _run["code"] = 0
        elif isinstance(e.code, int):
            _run["code"] = e.code & 0xFF
        else:
            try:
                print(e.code, file=sys.stderr)
            except BaseException:
                pass
            _run["code"] = 1
        return
    _run["status"], _run["code"] = (b"mem" if isinstance(e, MemoryError) else b"exc"), 1
    _report(e)


# The hook the guarded module body calls. It is not in sys.modules, so
# `import _toolhost` and importlib find nothing; the guard's handler reaches
# it as a constant of the program's code object (see _bind).
_toolhost = types.ModuleType("_toolhost", "run_code's sandbox")
_toolhost.caught = _caught
_HOOK = "\0toolhost hook\0"  # placeholder constant, replaced by _bind


def _guard(tree):
    # try: <module body> except BaseException as e: <hook>.caught(e),
    # after the docstring and the __future__ imports, which must stay first.
    body, i = tree.body, 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        i = 1
    while i < len(body) and isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__":
        i += 1
    if i == len(body):
        return tree
    last = body[-1]
    at = {"lineno": getattr(last, "end_lineno", last.lineno), "col_offset": 0}
    name = lambda n, ctx: ast.Name(n, ctx, **at)
    handler = ast.ExceptHandler(
        type=name("BaseException", ast.Load()), name="__toolhost_exc",
        body=[
            ast.Expr(ast.Call(ast.Attribute(ast.Constant(_HOOK, **at), "caught", ast.Load(), **at),
                              [name("__toolhost_exc", ast.Load())], [], **at), **at),
        ], **at)
    guarded = ast.Try(body=body[i:], handlers=[handler], orelse=[], finalbody=[], **at)
    ast.copy_location(guarded, body[i])
    tree.body = body[:i] + [guarded]
    return tree


def _bind(code):
    # The handler's placeholder string becomes the hook module itself.
    consts = tuple(_toolhost if type(c) is str and c == _HOOK else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def _finish():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    code = _run["code"]
    os._exit(code + EXIT_MEMORY if _run["status"] == b"mem" else code)


def _prepare():
    random.seed()  # restored interpreters share the template's state
    header = sys.stdin.buffer.readline()
    if not header:
        os._exit(0)
    src = sys.stdin.buffer.read(int(header))
    text = src.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    sys.argv = ["main.py"]
    # The program's module is __main__, as under `python main.py`: pickle,
    # dataclasses and `import __main__` find what it defines.
    main = types.ModuleType("__main__")
    main.__builtins__, main.__file__, main.__cached__ = builtins, "main.py", None
    sys.modules["__main__"] = main
    scope = main.__dict__
    try:
        tree = compile(src, "main.py", "exec", ast.PyCF_ONLY_AST)
        return types.FunctionType(_bind(compile(_guard(tree), "main.py", "exec")), scope)
    except BaseException as e:  # SyntaxError, null bytes, too deeply nested
        _caught(e)
        return _finish


# Warm the path every program takes: parse to a tree, guard, compile.
_bind(compile(_guard(compile("'w'\nfrom __future__ import annotations\nx: int = 1\n", "<warm-up>", "exec",
                             ast.PyCF_ONLY_AST)), "<warm-up>", "exec"))

if sys.argv[-1] == "snapshot":
    # The host snapshots the interpreter inside a time.time() call made
    # from C at exit, when no Python frame is on the stack; nothing ever
    # returns to the template.
    import atexit
    os.write(1, b"\0toolhost-handoff %d %d %d %d %d\n" % (
        id(_prepare), id(_finish), id(_quit), id(type(_prepare)), type(_prepare).__basicsize__))
    atexit.register(os._exit, 70)
    atexit.register(time.time)
else:  # booted for one run, without a snapshot
    _prepare()()
    _finish()
