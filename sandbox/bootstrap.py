# The run_code Python bootstrap. It runs before the user's program exists:
# it imports the common standard-library modules and compiles a warm-up
# snippet (inside the sandbox both cost hundreds of milliseconds, so they must
# not be paid per run), then blocks reading "<token> <length>\n" and the
# program from stdin; the rest of stdin is the program's own. After the
# program it flushes, writes NUL + token + status to stderr for the host and
# leaves through os._exit, skipping the interpreter's finalization.
# sys.__excepthook__ prints tracebacks the way python itself does (C code, at
# most sys.tracebacklimit frames), fast even after a 100 000-deep recursion.
import sys, os, builtins, traceback, linecache, select
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


def _bootstrap():
    _exit, _write, _stdin = os._exit, os.write, sys.stdin.buffer
    random.seed()  # restored interpreters share the template's state
    header = _stdin.readline()
    if not header:
        _exit(0)
    token, size = header.split()
    src = _stdin.read(int(size))
    text = src.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    sys.argv = ["main.py"]
    scope = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    status, code = b"ok", 0
    try:
        exec(compile(src, "main.py", "exec"), scope)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xFF
        else:
            try:
                print(e.code, file=sys.stderr)
            except BaseException:
                pass
            code = 1
    except MemoryError as e:
        status, code = b"mem", 1
        try:
            sys.__excepthook__(type(e), e, e.__traceback__.tb_next)
        except BaseException:
            pass
    except BaseException as e:
        status, code = b"exc", 1
        try:
            sys.__excepthook__(type(e), e, e.__traceback__.tb_next)
        except BaseException:
            pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    try:
        _write(2, b"\0" + token + b" " + status + b" " + str(code).encode() + b"\n")
    finally:
        _exit(code)


if sys.argv[-1] == "snapshot":
    # The host snapshots the interpreter inside this time.time() call and
    # enters restored copies through _bootstrap; it never returns here.
    os.write(1, b"\0toolhost-handoff %d %d %d %d\n" % (
        id(_bootstrap), id(_quit), id(type(_bootstrap)), type(_bootstrap).__basicsize__))
    time.time()
    os._exit(70)
_bootstrap()
