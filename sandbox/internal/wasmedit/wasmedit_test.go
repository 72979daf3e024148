package wasmedit

import (
	"errors"
	"testing"
)

// module assembles a binary from sections (id, body).
func module(secs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		out = append(out, s[0])
		out = appendULEB(out, uint64(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func sec(id byte, body ...byte) []byte { return append([]byte{id}, body...) }

// A minimal module: one type ()->(), one function, memory, a mutable i32
// global, exports, a body, one active data segment "hi" at 16, a custom
// section.
func minimal(extra ...[]byte) []byte {
	secs := [][]byte{
		sec(wasmSecType, 1, 0x60, 0, 0),
		sec(wasmSecFunction, 1, 0),
		sec(4, 1, 0x70, 0, 1),                         // table funcref min 1
		sec(5, 1, 0, 1),                               // memory min 1
		sec(wasmSecGlobal, 1, 0x7f, 1, 0x41, 0, 0x0b), // mut i32 = 0
		sec(wasmSecExport, 1, 1, 'm', 2, 0),
		sec(wasmSecCode, 1, 2, 0, 0x0b),
		sec(wasmSecData, 1, 0, 0x41, 16, 0x0b, 2, 'h', 'i'),
		sec(0, 1, 'x', 0xaa),
	}
	return module(append(secs, extra...)...)
}

func TestApplyTakesTheDataOutAndAddsTheEntryPoints(t *testing.T) {
	out, data, err := Apply(minimal(), Edit{Trampoline: "call", ExportGlobal0: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1 || data[0].Offset != 16 || string(data[0].Data) != "hi" {
		t.Fatalf("data = %+v", data)
	}
	secs, err := splitSections(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []byte
	for _, s := range secs {
		ids = append(ids, s.id)
		switch s.id {
		case wasmSecType:
			if n, _, _ := vecCount(s.body); n != 3 { // ()->(), vectorcall, trampoline
				t.Errorf("%d types, want 3", n)
			}
		case wasmSecExport:
			if n, _, _ := vecCount(s.body); n != 3 {
				t.Errorf("%d exports, want 3", n)
			}
		case wasmSecCode, wasmSecFunction:
			if n, _, _ := vecCount(s.body); n != 2 {
				t.Errorf("section %d has %d functions, want 2", s.id, n)
			}
		}
	}
	if string(ids) != string([]byte{1, 3, 4, 5, 6, 7, 10}) {
		t.Errorf("sections %v: want no data and no custom section", ids)
	}
	// Deterministic: the same input gives the same bytes.
	again, _, _ := Apply(minimal(), Edit{Trampoline: "call", ExportGlobal0: "sp"})
	if string(again) != string(out) {
		t.Error("two edits of the same binary differ")
	}
	kept, _, err := Apply(minimal(), Edit{KeepCustom: true})
	if err != nil {
		t.Fatal(err)
	}
	if ks, _ := splitSections(kept); ks[len(ks)-1].id != 0 {
		t.Error("KeepCustom dropped the custom section")
	}
}

// The segments are kept for as long as the engine runs: they must not hold
// the runtime file they came from (26 MB for CPython) in memory.
func TestApplyDataDoesNotAliasTheInput(t *testing.T) {
	in := minimal()
	_, data, err := Apply(in, Edit{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0
	}
	if len(data) != 1 || string(data[0].Data) != "hi" {
		t.Fatalf("data after the input was overwritten = %+v", data)
	}
	if cap(data[0].Data) != len(data[0].Data) {
		t.Errorf("segment capacity %d past its length %d: an append would write into the next segment", cap(data[0].Data), len(data[0].Data))
	}
}

func TestApplyRefusesWhatItCannotRearrange(t *testing.T) {
	good := minimal()
	cases := map[string][]byte{
		"empty":                nil,
		"bad magic":            []byte("\x00wasm\x01\x00\x00\x00"),
		"truncated section":    good[:len(good)-3],
		"passive data":         module(sec(wasmSecData, 1, 1, 1, 'x')),
		"computed data offset": module(sec(wasmSecData, 1, 0, 0x23, 0, 0x0b, 0)),
		"start function":       module(sec(wasmSecStart, 0)),
		"section twice":        module(sec(wasmSecType, 0), sec(wasmSecType, 0)),
		"huge LEB":             append([]byte("\x00asm\x01\x00\x00\x00\x01"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
	}
	for name, wasm := range cases {
		if _, _, err := Apply(wasm, Edit{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	immutable := module(sec(wasmSecType, 0), sec(wasmSecGlobal, 1, 0x7f, 0, 0x41, 0, 0x0b), sec(wasmSecExport, 0))
	if _, _, err := Apply(immutable, Edit{ExportGlobal0: "sp"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("immutable global 0: %v, want ErrUnsupported", err)
	}
}
