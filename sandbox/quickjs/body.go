package quickjs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// evalFlagCompileOnly is JS_EVAL_FLAG_COMPILE_ONLY: parse and compile the
// source, run nothing of it.
const evalFlagCompileOnly = 1 << 5

// checkBody makes sure body is one function body before anything of it
// runs. CallFunction compiles functionHead + body + "\n})", so a body can
// close that function early and write code of its own at the top level
// ("}); work(); (function () {"): the engine's Function constructor builds
// its source the same way, so it is no help. The check compiles, without
// running it, the body inside a block labelled with a fresh random name in
// the same function head, followed by a break to that label:
//
//	(function (args) { L: {<body>\n;break L;} })
//
// That break compiles only inside the block L, in the very function whose
// head opened it: a body that closed the block or the function cannot have
// reopened them (it cannot name L, which is new on every call), and a body
// that leaves a string, comment, template or regular expression open at its
// end fails to compile, since the source ends there. The body starts in the
// same parsing state as in the real source (just after a "{", at statement
// position), so both parses see the same tokens; the one difference, a
// leading "use strict" that is a directive only in the real source, makes
// some programs errors, never a program that parses another way. What the
// check refuses that a function body allows: a name declared by both var
// and a function declaration at the body's top level (in a block, that
// clash is an error).
//
// A body that passed is remembered by its digest (checkedBodies), so the
// check's compile is paid once per body, not at every call.
func (vm *VM) checkBody(ctx context.Context, body string) error {
	digest := sha256.Sum256([]byte(body))
	if vm.passedBodies.passed(digest) {
		return nil
	}
	if err := vm.runCheck(ctx, body); err != nil {
		return err
	}
	vm.passedBodies.pass(digest)
	return nil
}

// runCheck compiles the check of checkBody.
func (vm *VM) runCheck(ctx context.Context, body string) error {
	vm.passedBodies.compiles.Add(1)
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	label := "toolhost_" + hex.EncodeToString(nonce[:])
	head := "(function (args) { " + label + ": {"
	err := vm.compileOnly(ctx, head+body+"\n;break "+label+";} })")
	var check *jsError
	if err == nil || !errors.As(err, &check) {
		return err
	}
	if err := vm.compileOnly(ctx, functionHead+body+"\n})"); err != nil {
		return err // an ordinary syntax error, with its own position
	}
	// The body compiles as the function's source but not inside the
	// block: it closes the function early. Say where, in the positions
	// of the real source (CallFunction maps line one's columns).
	text := "SyntaxError: the script must be the body of one function, and it closes that function before its end (a \"}\" with no \"{\" of its own)"
	if line, col, ok := position(body, earlyClose(body)); ok {
		return &jsError{text: text + "\n    at " + evalFile + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col+colOffset(line, functionHead))}
	}
	if m := evalPos.FindStringSubmatch(check.text); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line <= strings.Count(body, "\n")+1 {
			col = max(col-colOffset(line, head), 1)
			return &jsError{text: text + "\n    at " + evalFile + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col+colOffset(line, functionHead))}
		}
	}
	return &jsError{text: text}
}

var evalPos = regexp.MustCompile(regexp.QuoteMeta(evalFile) + `:(\d+):(\d+)`)

// colOffset is how many columns head adds to a position on line.
func colOffset(line int, head string) int {
	if line == 1 {
		return len(head)
	}
	return 0
}

// compileOnly compiles source as a global script and runs none of it.
func (vm *VM) compileOnly(ctx context.Context, source string) error {
	fn, err := vm.evalScript(ctx, source, "", evalFlagCompileOnly)
	if err == nil {
		vm.freeValue(ctx, fn)
	}
	return err
}

// position is the 1-based line and column of byte i of s (false when i is
// negative).
func position(s string, i int) (line, col int, ok bool) {
	if i < 0 {
		return 0, 0, false
	}
	line = strings.Count(s[:i], "\n") + 1
	return line, i - strings.LastIndexByte(s[:i], '\n'), true
}

// earlyClose finds, for the error message only, the "}" that closes the
// function a body is the body of: the first one with no "{" of its own
// outside strings, comments, template literals and regular expressions, or
// -1. A "/" is taken for a regular expression after a punctuator and for a
// division otherwise, which is a guess (checkBody's compile is what
// decides; this only points at the place).
func earlyClose(b string) int {
	depth := 0
	var subst []int // the depth of each open "${" of a template literal
	prev := byte('{')
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case strings.HasPrefix(b[i:], "//"):
			for i < len(b) && b[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(b[i:], "/*"):
			end := strings.Index(b[i+2:], "*/")
			if end < 0 {
				return -1
			}
			i += end + 3
			continue
		case c == '"' || c == '\'':
			i = skipQuoted(b, i, c)
		case c == '`' || (c == '}' && len(subst) > 0 && subst[len(subst)-1] == depth):
			if c == '}' {
				subst = subst[:len(subst)-1]
			}
			var open bool
			if i, open = skipTemplate(b, i+1); open {
				subst = append(subst, depth)
			}
			c = '`'
		case c == '/' && strings.IndexByte("(,=:[!&|?{};+-*%<>~^", prev) >= 0:
			i = skipQuoted(b, i, '/')
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return i
			}
			depth--
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			prev = c
		}
	}
	return -1
}

// skipQuoted returns the index of the quote that closes the string (or
// regular expression) opening at i, or the end of its line.
func skipQuoted(b string, i int, q byte) int {
	class := false
	for i++; i < len(b) && b[i] != '\n'; i++ {
		switch {
		case b[i] == '\\':
			i++
		case q == '/' && b[i] == '[':
			class = true
		case q == '/' && b[i] == ']':
			class = false
		case b[i] == q && !class:
			return i
		}
	}
	return i
}

// skipTemplate scans template literal text from i: it returns the index of
// the closing backquote, or of the "{" of a "${" (open is then true).
func skipTemplate(b string, i int) (end int, open bool) {
	for ; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '`':
			return i, false
		case b[i] == '$' && i+1 < len(b) && b[i+1] == '{':
			return i + 1, true
		}
	}
	return i, false
}
