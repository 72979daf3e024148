// The prelude is evaluated once per instance, before any user code. It is a
// function expression: the host calls it with the two console host
// functions, so they never appear on the global object, and it returns the
// helpers the host keeps (never reachable from user code). It captures the
// built-ins it relies on, so a program that patches JSON or Object cannot
// change what the host reads back.
(function (hostOut, hostErr) {
  "use strict";
  const G = globalThis;
  const imul = Math.imul;
  const stringify = JSON.stringify;
  const objectToString = Object.prototype.toString;
  const getPrototypeOf = Object.getPrototypeOf;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const defineProperty = Object.defineProperty;
  const StringCtor = String;
  const ErrorCtor = Error;
  const MapCtor = Map;
  const SetCtor = Set;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const hrNow = performance.now.bind(performance);
  const now = hrNow;
  const dateToISO = Date.prototype.toISOString;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const apply = Function.prototype.apply;

  // Math.random: QuickJS seeds its generator from the clock when the context
  // is created, so two instances created in the same microsecond (or restored
  // from one snapshot) would draw the same numbers. xoshiro128** with a state
  // the host fills from crypto/rand for every instance.
  let s0 = 1, s1 = 0, s2 = 0, s3 = 0;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  function next() {
    const r = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 11);
    return r;
  }
  defineProperty(Math, "random", {
    value: function random() {
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    },
    writable: true, configurable: true, enumerable: false,
  });
  // performance.now() counts from the instance's start, not from the
  // snapshot's, and timeOrigin is the wall-clock time of that start.
  // (The engine's performance object has non-configurable properties, so it
  // is replaced.)
  let origin = 0, timeOrigin = 0;
  const perf = {
    now() { return hrNow() - origin; },
    get timeOrigin() { return timeOrigin; },
    toJSON() { return { timeOrigin }; },
  };
  defineProperty(G, "performance", { value: perf, writable: true, configurable: true, enumerable: false });
  function seed(a, b, c, d) {
    s0 = a | 0; s1 = b | 0; s2 = c | 0; s3 = d | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
    origin = hrNow();
    timeOrigin = DateCtor.now();
  }

  // console: formatting close to Node's, so that what a model expects to see
  // is what it sees.
  function quote(s) { return stringify(s); }
  // ownFrames keeps the frames of a stack that are the program's: the
  // prelude's own frames (a timer's runTimers, console.log's inspect, the
  // tool script's caller) and the native frames that only lead to them are
  // dropped, so a failure shows the program's code and nothing of the
  // sandbox's. Captured methods only: a program patching String breaks
  // nothing here.
  const indexOf = String.prototype.indexOf, slice = String.prototype.slice;
  function ownFrames(stack) {
    let out = "", natives = "", i = 0;
    while (i < stack.length) {
      let j = call(indexOf, stack, "\n", i);
      if (j < 0) j = stack.length;
      const line = call(slice, stack, i, j);
      i = j + 1;
      if (call(indexOf, line, "(<prelude>:") >= 0) natives = "";
      else if (call(indexOf, line, "(native)") >= 0) natives += line + "\n";
      else if (line !== "") { out += natives + line + "\n"; natives = ""; }
    }
    out += natives;
    return call(slice, out, 0, out.length - 1);
  }
  function fnName(f) {
    let n = "";
    try { n = f.name; } catch (_) { /* a getter may throw */ }
    return n ? n : "(anonymous)";
  }
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case "string": return depth === 0 ? v : quote(v);
      case "number": return v === 0 && 1 / v < 0 ? "-0" : StringCtor(v);
      case "bigint": return StringCtor(v) + "n";
      case "undefined": return "undefined";
      case "boolean": return v ? "true" : "false";
      case "symbol": return v.toString();
      case "function": return "[Function: " + fnName(v) + "]";
    }
    if (v === null) return "null";
    if (seen.indexOf(v) >= 0) return "[Circular]";
    if (v instanceof ErrorCtor) {
      const head = StringCtor(v);
      const stack = v.stack;
      const own = typeof stack === "string" ? ownFrames(stack) : "";
      return own ? head + "\n" + own : head;
    }
    if (v instanceof DateCtor) {
      try { return call(dateToISO, v); } catch (_) { return "Invalid Date"; }
    }
    if (v instanceof RegExpCtor) return StringCtor(v);
    if (depth > 2) return isArray(v) ? "[Array]" : "[Object]";
    seen.push(v);
    try {
      const parts = [];
      const max = 100;
      let more = 0;
      let open = "{", close = "}", prefix = "";
      if (isArray(v)) {
        open = "["; close = "]";
        for (let i = 0; i < v.length; i++) {
          if (parts.length >= max) { more = v.length - i; break; }
          parts.push(inspect(v[i], depth + 1, seen));
        }
      } else if (v instanceof MapCtor) {
        prefix = "Map(" + v.size + ") ";
        for (const [k, x] of v) {
          if (parts.length >= max) { more = v.size - max; break; }
          parts.push(inspect(k, depth + 1, seen) + " => " + inspect(x, depth + 1, seen));
        }
      } else if (v instanceof SetCtor) {
        prefix = "Set(" + v.size + ") ";
        for (const x of v) {
          if (parts.length >= max) { more = v.size - max; break; }
          parts.push(inspect(x, depth + 1, seen));
        }
      } else {
        const proto = getPrototypeOf(v);
        if (proto === null) prefix = "[Object: null prototype] ";
        else if (proto !== Object.prototype && proto.constructor && typeof proto.constructor.name === "string" && proto.constructor.name) {
          prefix = proto.constructor.name + " ";
        }
        const ks = keys(v);
        for (let i = 0; i < ks.length; i++) {
          if (parts.length >= max) { more = ks.length - i; break; }
          const k = ks[i];
          const name = /^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k);
          parts.push(name + ": " + inspect(v[k], depth + 1, seen));
        }
      }
      if (more > 0) parts.push("... " + more + " more item" + (more > 1 ? "s" : ""));
      if (parts.length === 0) return prefix + open + close;
      return prefix + open + " " + parts.join(", ") + " " + close;
    } finally {
      seen.pop();
    }
  }
  function format(args) {
    let out = [];
    let i = 0;
    if (typeof args[0] === "string" && args.length > 1 && args[0].indexOf("%") >= 0) {
      i = 1;
      out.push(args[0].replace(/%[sdifjoOc%]/g, (m) => {
        if (m === "%%") return "%";
        if (i >= args.length) return m;
        const a = args[i++];
        switch (m) {
          case "%s": return typeof a === "string" ? a : inspect(a, 1, []);
          case "%d": case "%i": return typeof a === "bigint" ? StringCtor(a) + "n" : StringCtor(m === "%i" ? Math.trunc(Number(a)) : Number(a));
          case "%f": return StringCtor(Number(a));
          // serialize, not stringify: stringify is quadratic in the
          // nesting, so a deep value would spend the run in console.log.
          case "%j": try { const j = serialize(a); return j === TooDeep ? "[nested more than " + maxDepth + " levels deep]" : j; } catch (_) { return "[Circular]"; }
          case "%c": return "";
          default: return inspect(a, 1, []);
        }
      }));
    }
    for (; i < args.length; i++) out.push(inspect(args[i], 0, []));
    return out.join(" ") + "\n";
  }
  const counts = new MapCtor();
  const timersStart = new MapCtor();
  const console = {
    log(...a) { hostOut(format(a)); },
    info(...a) { hostOut(format(a)); },
    debug(...a) { hostOut(format(a)); },
    error(...a) { hostErr(format(a)); },
    warn(...a) { hostErr(format(a)); },
    trace(...a) {
      const stack = new ErrorCtor().stack;
      const own = typeof stack === "string" ? ownFrames(stack) : "";
      hostErr("Trace: " + format(a) + (own ? own + "\n" : ""));
    },
    dir(v) { hostOut(inspect(v, 1, []) + "\n"); },
    table(v) { hostOut(inspect(v, 1, []) + "\n"); },
    assert(ok, ...a) { if (!ok) hostErr("Assertion failed" + (a.length ? ": " + format(a) : "\n")); },
    count(label = "default") { const n = (counts.get(label) || 0) + 1; counts.set(label, n); hostOut(label + ": " + n + "\n"); },
    countReset(label = "default") { counts.delete(label); },
    time(label = "default") { timersStart.set(label, now()); },
    timeEnd(label = "default") {
      const t = timersStart.get(label);
      if (t !== undefined) { timersStart.delete(label); hostOut(label + ": " + (now() - t).toFixed(3) + "ms\n"); }
    },
    timeLog(label = "default", ...a) {
      const t = timersStart.get(label);
      if (t !== undefined) hostOut(label + ": " + (now() - t).toFixed(3) + "ms" + (a.length ? " " + format(a) : "\n"));
    },
  };
  defineProperty(G, "console", { value: console, writable: true, configurable: true, enumerable: false });

  // Timers run on real time: the host sleeps until the next one is due.
  // They wait in a binary heap ordered by (due, creation) and in a Map by
  // id; a cleared timer leaves the Map and is skipped when it reaches the
  // top. Only captured methods and index assignments are used, so a program
  // patching Map or Array breaks nothing but its own code.
  const mapGet = MapCtor.prototype.get, mapSet = MapCtor.prototype.set, mapDelete = MapCtor.prototype.delete;
  let nextTimerId = 1, nextSeq = 1;
  const timers = new MapCtor();
  const heap = [];
  let heapLen = 0;
  const before = (a, b) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
  function heapPush(t) {
    t.seq = nextSeq++;
    let i = heapLen++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(t, heap[p])) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = t;
  }
  function heapPop() {
    const top = heap[0];
    const last = heap[--heapLen];
    heap[heapLen] = undefined;
    if (heapLen > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i, mv = last;
        if (l < heapLen && before(heap[l], mv)) { m = l; mv = heap[l]; }
        if (r < heapLen && before(heap[r], mv)) { m = r; mv = heap[r]; }
        if (m === i) break;
        heap[i] = mv;
        i = m;
      }
      heap[i] = last;
    }
    return top;
  }
  function addTimer(fn, delay, args, repeat) {
    if (typeof fn !== "function") throw new TypeError("The \"callback\" argument must be of type function");
    delay = Number(delay);
    if (!(delay >= 1) || delay > 2147483647) delay = 1;
    const id = nextTimerId++;
    const t = { id, fn, args, delay, due: now() + delay, repeat, seq: 0 };
    call(mapSet, timers, id, t);
    heapPush(t);
    return id;
  }
  function clearTimer(id) { call(mapDelete, timers, id); }
  const timerGlobals = {
    setTimeout(fn, delay, ...args) { return addTimer(fn, delay, args, false); },
    setInterval(fn, delay, ...args) { return addTimer(fn, delay, args, true); },
    clearTimeout: clearTimer,
    clearInterval: clearTimer,
  };
  for (const k of keys(timerGlobals)) {
    defineProperty(G, k, { value: timerGlobals[k], writable: true, configurable: true, enumerable: false });
  }
  // runTimers runs the earliest timer if it is due and answers how many
  // milliseconds remain until the next one (0: call again now, -1: none).
  function runTimers() {
    while (heapLen > 0 && call(mapGet, timers, heap[0].id) !== heap[0]) heapPop();
    if (heapLen === 0) return -1;
    const t = heap[0];
    const wait = t.due - now();
    if (wait > 0) return wait;
    heapPop();
    if (t.repeat) { t.due = now() + t.delay; heapPush(t); } else call(mapDelete, timers, t.id);
    call(apply, t.fn, undefined, t.args);
    return 0;
  }

  // JSON.stringify checks for a cycle by scanning the values it is inside,
  // so its time grows with the square of the nesting: 10 000 levels take
  // seconds, a million far longer than any deadline. So the
  // host's limit (maxDepth, calls.go's maxJSONDepth: 997, which leaves
  // the MCP result envelope its 3 levels under the go-sdk client's 1000) is
  // enforced before
  // stringify goes that deep, in two ways (serialize):
  //
  // tooDeep walks the value's own enumerable data properties, depth first,
  // reading descriptors so no getter runs twice: true past maxDepth levels,
  // false when the whole value is shallower, undefined when it cannot say
  // (a cycle, which stringify names, more than walkBudget properties, or
  // a value whose JSON program code makes: a toJSON, a getter, whose
  // result the walk cannot see without running it twice). Frames are object literals linked by "up" (own properties:
  // no setter a program put on a prototype sees them; objects used as
  // growing arrays would be quadratic in this engine); a Proxy's traps run.
  //
  // When it cannot say, stringify runs with deepReplacer, which follows the
  // holders stringify passes it (after toJSON, exactly what is written)
  // and throws past maxDepth levels: it stops the quadratic scan at
  // maxDepth whatever the depth, at the price of a call per value (so a
  // value of more than walkBudget properties serializes more slowly).
  const maxDepth = 997, walkBudget = 1 << 14;
  const tooDeepText = "RangeError: its JSON nests more than " + maxDepth + " levels deep, more than a tool result can carry";
  const ownDesc = Object.getOwnPropertyDescriptor;
  const hasOwn = Object.prototype.hasOwnProperty;
  const setHas = SetCtor.prototype.has, setAdd = SetCtor.prototype.add, setDelete = SetCtor.prototype.delete;
  const walkable = (x) => typeof x === "object" && x !== null && !("toJSON" in x);
  const names = (o) => (isArray(o) ? null : keys(o));
  function tooDeep(v) {
    if (typeof v !== "object" || v === null) return false;
    if (!walkable(v)) return undefined;
    const path = new SetCtor();
    call(setAdd, path, v);
    let top = { o: v, list: names(v), i: 0, up: null }, depth = 1, budget = walkBudget;
    while (top !== null) {
      const o = top.o, list = top.list, i = top.i;
      if (i >= (list === null ? o.length : list.length)) {
        call(setDelete, path, o);
        top = top.up;
        depth--;
        continue;
      }
      if (--budget < 0) return undefined;
      top.i = i + 1;
      const d = ownDesc(o, list === null ? i : list[i]);
      if (d === undefined) continue;
      if (!call(hasOwn, d, "value")) return undefined; // a getter
      const x = d.value;
      if (typeof x !== "object" || x === null) continue;
      if (!walkable(x)) return undefined; // a toJSON
      if (call(setHas, path, x)) return undefined;
      if (depth >= maxDepth) return true;
      top = { o: x, list: names(x), i: 0, up: top };
      depth++;
      call(setAdd, path, x);
    }
    return false;
  }
  const TooDeep = {};
  function deepReplacer() {
    let top = null, depth = 0;
    return function (k, v) {
      while (top !== null && top.h !== this) { top = top.up; depth--; }
      if (typeof v === "object" && v !== null) {
        if (depth >= maxDepth) throw TooDeep;
        top = { h: v, up: top };
        depth++;
      }
      return v;
    };
  }
  // serialize is stringify(v) within the host's nesting limit: the JSON
  // text, undefined (no JSON text), or TooDeep; it throws what stringify
  // throws.
  function serialize(v) {
    const deep = tooDeep(v);
    if (deep === true) return TooDeep;
    if (deep === false) return stringify(v);
    try {
      return stringify(v, deepReplacer());
    } catch (e) {
      if (e === TooDeep) return TooDeep;
      throw e;
    }
  }

  // toJSON is how the host reads the last value: JSON text, "null" when
  // JSON has no text for it (undefined, a function, a symbol), or, when
  // serializing it threw (a BigInt, a cycle, a toJSON that throws, nesting
  // deeper than the host reads), "!" and why: a character no JSON text
  // starts with, so the host tells the two apart without a second call.
  function toJSON(v) {
    let s;
    try {
      s = serialize(v);
      if (s === TooDeep) return "!" + tooDeepText;
    } catch (e) {
      return "!" + describe(e);
    }
    return typeof s === "string" ? s : "null";
  }
  // describe renders an uncaught exception: the message and the stack.
  function describe(e) {
    try {
      if (e instanceof ErrorCtor) return inspect(e, 0, []);
      return "Uncaught " + inspect(e, 1, []);
    } catch (_) {
      return "Uncaught exception";
    }
  }
  // define makes a global from JSON text the host supplies (input data such
  // as files or a tool's arguments), without building source code.
  const parse = JSON.parse;
  function define(name, text) {
    defineProperty(G, name, { value: parse(text), writable: true, configurable: true, enumerable: false });
  }
  // toolScript runs a tool definition's script (tools/runcode): fn is the
  // script compiled by the host as the body of a function of args, text the
  // arguments' JSON. It is one of the helpers the host keeps, never a global,
  // so a program cannot call it or replace it. It uses the built-ins
  // captured above, so a script that replaces JSON.stringify (or poisons
  // toJSON, which then throws) cannot change how its result is read; the
  // host checks the size of the text it returns.
  const freeze = Object.freeze;
  const TypeErrorCtor = TypeError;
  function toolScript(fn, text) {
    const r = fn(freeze(parse(text)));
    let s;
    try {
      s = serialize(r === undefined ? null : r);
    } catch (e) {
      throw new TypeErrorCtor("the script returned a value JSON cannot represent: " + describe(e));
    }
    if (s === TooDeep) throw new TypeErrorCtor("the script returned a value JSON cannot represent: " + tooDeepText);
    if (s === undefined) throw new TypeErrorCtor("the script returned a value JSON cannot represent (" + typeof r + ")");
    return s;
  }
  return { seed, toJSON, describe, runTimers, define, toolScript };
})
