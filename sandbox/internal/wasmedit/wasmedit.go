// Package wasmedit rearranges a WebAssembly binary at the section level so
// an instance of it can be restored from a memory snapshot: it takes the
// data segments out (the host writes them into a first instance itself, and
// a restored instance must not get them, since instantiation would
// overwrite the snapshot with the initial values), and can export global 0
// and add a trampoline that calls a table entry.
//
// Appending a type, a function and exports shifts no existing index, so an
// edit is a pure function of the input bytes: the same binary always gives
// the same module, and wazero's compilation cache keeps working.
//
// There is no maintained Go library that edits WebAssembly binaries (wazero
// decodes into internal types only); the editing needed is section-level and
// about 300 lines, so it is written here.
package wasmedit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	wasmSecType     = 1
	wasmSecImport   = 2
	wasmSecFunction = 3
	wasmSecGlobal   = 6
	wasmSecExport   = 7
	wasmSecStart    = 8
	wasmSecCode     = 10
	wasmSecData     = 11
	wasmSecDataCnt  = 12
)

type wasmSection struct {
	id   byte
	body []byte
}

// Segment is an active data segment of memory 0.
type Segment struct {
	Offset uint32
	Data   []byte
}

// Edit says what Apply does besides taking the data segments out.
type Edit struct {
	// Trampoline, when set, is the name of an exported function added to
	// the module: (fn, a, b, c, d i32) -> i32 calls entry fn of table 0
	// with (a, b, c, d) — the C signature of CPython's vectorcall.
	Trampoline string
	// ExportGlobal0, when set, exports global 0, which must be a mutable
	// i32 defined by the module (wasm-ld's shadow-stack pointer), under
	// this name.
	ExportGlobal0 string
	// KeepCustom keeps the custom sections (names, DWARF); by default they
	// are dropped.
	KeepCustom bool
}

// ErrUnsupported: the binary has a shape Apply does not handle.
var ErrUnsupported = errors.New("not a WebAssembly module that can be rearranged")

var errWasm = ErrUnsupported

func readULEB(b []byte, i int) (uint64, int, error) {
	var r uint64
	var s uint
	for {
		if i >= len(b) || s > 63 {
			return 0, 0, fmt.Errorf("%w: truncated LEB128", errWasm)
		}
		x := b[i]
		i++
		r |= uint64(x&0x7f) << s
		s += 7
		if x < 0x80 {
			return r, i, nil
		}
	}
}

func readSLEB32(b []byte, i int) (int32, int, error) {
	var r int64
	var s uint
	for {
		if i >= len(b) || s > 35 {
			return 0, 0, fmt.Errorf("%w: truncated LEB128", errWasm)
		}
		x := b[i]
		i++
		r |= int64(x&0x7f) << s
		s += 7
		if x < 0x80 {
			if s < 64 && x&0x40 != 0 {
				r |= -1 << s
			}
			return int32(r), i, nil
		}
	}
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		x := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, x|0x80)
			continue
		}
		return append(b, x)
	}
}

func splitSections(wasm []byte) ([]wasmSection, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(wasm[4:8]) != 1 {
		return nil, fmt.Errorf("%w: bad header", errWasm)
	}
	var out []wasmSection
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, j, err := readULEB(wasm, i+1)
		if err != nil {
			return nil, err
		}
		if j+int(size) > len(wasm) {
			return nil, fmt.Errorf("%w: section %d runs past the end", errWasm, id)
		}
		out = append(out, wasmSection{id: id, body: wasm[j : j+int(size)]})
		i = j + int(size)
	}
	return out, nil
}

// vecCount reads a section's leading element count.
func vecCount(body []byte) (uint64, int, error) { return readULEB(body, 0) }

// withCount re-encodes body (a vector) with n more elements and extra
// appended.
func withCount(body []byte, add int, extra []byte) ([]byte, error) {
	n, i, err := vecCount(body)
	if err != nil {
		return nil, err
	}
	out := appendULEB(nil, n+uint64(add))
	out = append(out, body[i:]...)
	return append(out, extra...), nil
}

// funcType encodes a function type of i32 params and results.
func funcType(params, results int) []byte {
	b := []byte{0x60}
	b = appendULEB(b, uint64(params))
	for range params {
		b = append(b, 0x7f)
	}
	b = appendULEB(b, uint64(results))
	for range results {
		b = append(b, 0x7f)
	}
	return b
}

// findType returns the index of an existing i32-only type, or -1, and the
// number of types.
func findType(body []byte, want []byte) (int, int, error) {
	n, i, err := vecCount(body)
	if err != nil {
		return 0, 0, err
	}
	found := -1
	for t := 0; t < int(n); t++ {
		start := i
		if i >= len(body) || body[i] != 0x60 {
			return 0, 0, fmt.Errorf("%w: type %d is not a function type", errWasm, t)
		}
		i++
		for range 2 { // params, results
			c, j, err := readULEB(body, i)
			if err != nil {
				return 0, 0, err
			}
			i = j + int(c)
			if i > len(body) {
				return 0, 0, fmt.Errorf("%w: truncated type", errWasm)
			}
		}
		if found < 0 && bytes.Equal(body[start:i], want) {
			found = t
		}
	}
	return found, int(n), nil
}

// countImports returns how many functions and globals are imported.
func countImports(body []byte) (funcs, globals int, err error) {
	n, i, err := vecCount(body)
	if err != nil {
		return 0, 0, err
	}
	for range n {
		for range 2 { // module, name
			l, j, err := readULEB(body, i)
			if err != nil {
				return 0, 0, err
			}
			i = j + int(l)
		}
		if i >= len(body) {
			return 0, 0, fmt.Errorf("%w: truncated import", errWasm)
		}
		kind := body[i]
		i++
		switch kind {
		case 0: // func: typeidx
			funcs++
			_, i, err = readULEB(body, i)
		case 1: // table: reftype limits
			i++
			i, err = skipLimits(body, i)
		case 2: // memory: limits
			i, err = skipLimits(body, i)
		case 3: // global: valtype mut
			globals++
			i += 2
		default:
			return 0, 0, fmt.Errorf("%w: import kind %d", errWasm, kind)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return funcs, globals, nil
}

func skipLimits(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: truncated limits", errWasm)
	}
	flags := b[i]
	_, i, err := readULEB(b, i+1)
	if err != nil {
		return 0, err
	}
	if flags&1 != 0 {
		_, i, err = readULEB(b, i)
	}
	return i, err
}

// parseData reads the data section; every segment must be active on memory
// 0 with an i32.const offset, which is what wasm-ld writes. The segments'
// bytes are copied into one buffer of their own: the engine keeps them for
// as long as it runs, and a slice into body would keep the whole runtime
// file (CPython's is 26 MB, its data a fraction of it) alive on the heap.
func parseData(body []byte) ([]Segment, error) {
	n, i, err := vecCount(body)
	if err != nil {
		return nil, err
	}
	segs := make([]Segment, 0, n)
	for s := 0; s < int(n); s++ {
		flags, j, err := readULEB(body, i)
		if err != nil {
			return nil, err
		}
		i = j
		if flags != 0 {
			return nil, fmt.Errorf("%w: data segment %d is not active on memory 0 (flags %d)", errWasm, s, flags)
		}
		if i >= len(body) || body[i] != 0x41 { // i32.const
			return nil, fmt.Errorf("%w: data segment %d has a non-constant offset", errWasm, s)
		}
		off, j, err := readSLEB32(body, i+1)
		if err != nil {
			return nil, err
		}
		i = j
		if i >= len(body) || body[i] != 0x0b {
			return nil, fmt.Errorf("%w: data segment %d offset is not a single constant", errWasm, s)
		}
		l, j, err := readULEB(body, i+1)
		if err != nil {
			return nil, err
		}
		if j+int(l) > len(body) {
			return nil, fmt.Errorf("%w: data segment %d runs past the end", errWasm, s)
		}
		segs = append(segs, Segment{Offset: uint32(off), Data: body[j : j+int(l)]})
		i = j + int(l)
	}
	total := 0
	for _, sg := range segs {
		total += len(sg.Data)
	}
	own := make([]byte, 0, total)
	for k := range segs {
		at := len(own)
		own = append(own, segs[k].Data...)
		segs[k].Data = own[at:len(own):len(own)]
	}
	return segs, nil
}

// Apply edits wasm as e says and returns the new binary and the data
// segments it took out.
func Apply(wasm []byte, e Edit) ([]byte, []Segment, error) {
	secs, err := splitSections(wasm)
	if err != nil {
		return nil, nil, err
	}
	ed := editor{Edit: e, vectorcallType: -1, callType: -1}
	out := append([]byte(nil), wasm[:8]...)
	seen := map[byte]bool{}
	for _, s := range secs {
		if s.id != 0 && seen[s.id] {
			return nil, nil, fmt.Errorf("%w: section %d twice", errWasm, s.id)
		}
		seen[s.id] = true
		body, keep, err := ed.section(s.id, s.body)
		if err != nil {
			return nil, nil, err
		}
		if keep {
			out = append(out, s.id)
			out = appendULEB(out, uint64(len(body)))
			out = append(out, body...)
		}
	}
	if e.Trampoline != "" && (!seen[wasmSecType] || !seen[wasmSecFunction] || !seen[wasmSecExport] || !seen[wasmSecCode]) {
		return nil, nil, fmt.Errorf("%w: a type, function, export or code section is missing", errWasm)
	}
	if e.ExportGlobal0 != "" && (ed.globals == 0 || !seen[wasmSecExport]) {
		return nil, nil, fmt.Errorf("%w: no global or export section", errWasm)
	}
	return out, ed.data, nil
}

// editor is Apply's state across the sections, which come in a fixed
// order: what the type, import, function and global sections say is used
// by the export and code sections after them.
type editor struct {
	Edit
	importFuncs, importGlobals, definedFuncs, globals int
	// vectorcallType and callType are the type indices of the vectorcall
	// signature and the trampoline's, once the type section is read.
	vectorcallType, callType int
	data                     []Segment
}

// section returns the body section id should have in the new binary, or
// keep false when the section is left out.
func (ed *editor) section(id byte, body []byte) (_ []byte, keep bool, err error) {
	switch id {
	case 0: // custom: names, DWARF, producers; not needed to run
		return body, ed.KeepCustom, nil
	case wasmSecType:
		if ed.Trampoline != "" {
			body, err = ed.types(body)
		}
	case wasmSecImport:
		ed.importFuncs, ed.importGlobals, err = countImports(body)
	case wasmSecFunction:
		body, err = ed.functions(body)
	case wasmSecGlobal:
		err = ed.checkGlobals(body)
	case wasmSecExport:
		body, err = ed.exports(body)
	case wasmSecStart:
		return nil, false, fmt.Errorf("%w: it has a start function", errWasm)
	case wasmSecCode:
		if ed.Trampoline != "" {
			body, err = ed.code(body)
		}
	case wasmSecData:
		ed.data, err = parseData(body)
		return nil, false, err
	case wasmSecDataCnt:
		// Dropped with the data; a module using memory.init or
		// data.drop then fails validation, which is reported.
		return nil, false, nil
	}
	return body, err == nil, err
}

// types adds the trampoline's type, and vectorcall's when the module has
// none.
func (ed *editor) types(body []byte) ([]byte, error) {
	vc := funcType(4, 1)
	vectorcallType, n, err := findType(body, vc)
	if err != nil {
		return nil, err
	}
	var extra []byte
	add := 0
	if vectorcallType < 0 {
		vectorcallType = n + add
		extra = append(extra, vc...)
		add++
	}
	ed.vectorcallType = vectorcallType
	ed.callType = n + add
	extra = append(extra, funcType(5, 1)...)
	add++
	return withCount(body, add, extra)
}

// functions counts the module's functions and declares the trampoline's.
func (ed *editor) functions(body []byte) ([]byte, error) {
	n, _, err := vecCount(body)
	if err != nil {
		return nil, err
	}
	ed.definedFuncs = int(n)
	if ed.Trampoline == "" {
		return body, nil
	}
	return withCount(body, 1, appendULEB(nil, uint64(ed.callType)))
}

// checkGlobals counts the globals and, when global 0 is to be exported,
// checks that it is the mutable i32 stack pointer wasm-ld puts first.
func (ed *editor) checkGlobals(body []byte) error {
	n, i, err := vecCount(body)
	if err != nil {
		return err
	}
	ed.globals = int(n)
	if ed.ExportGlobal0 != "" && (n == 0 || ed.importGlobals != 0 || i+2 > len(body) || body[i] != 0x7f || body[i+1] != 1) {
		return fmt.Errorf("%w: global 0 is not a mutable i32 stack pointer", errWasm)
	}
	return nil
}

// exports adds the trampoline's export and global 0's.
func (ed *editor) exports(body []byte) ([]byte, error) {
	var extra []byte
	add := 0
	if ed.Trampoline != "" {
		extra = appendULEB(extra, uint64(len(ed.Trampoline)))
		extra = append(extra, ed.Trampoline...)
		extra = append(extra, 0x00) // func
		extra = appendULEB(extra, uint64(ed.importFuncs+ed.definedFuncs))
		add++
	}
	if ed.ExportGlobal0 != "" {
		extra = appendULEB(extra, uint64(len(ed.ExportGlobal0)))
		extra = append(extra, ed.ExportGlobal0...)
		extra = append(extra, 0x03) // global
		extra = appendULEB(extra, 0)
		add++
	}
	return withCount(body, add, extra)
}

// code adds the trampoline's body: (fn a b c d) -> call_indirect
// (a b c d) through table 0.
func (ed *editor) code(body []byte) ([]byte, error) {
	code := []byte{0x00, 0x20, 1, 0x20, 2, 0x20, 3, 0x20, 4, 0x20, 0, 0x11}
	code = appendULEB(code, uint64(ed.vectorcallType))
	code = append(code, 0x00, 0x0b)
	fn := appendULEB(nil, uint64(len(code)))
	return withCount(body, 1, append(fn, code...))
}
