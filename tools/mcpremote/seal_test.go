package mcpremote_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestSealOpensOnlyForItsServerAndKey(t *testing.T) {
	old, _ := mcpremote.NewSealer(key(1))
	sec := mcpremote.Secrets{Headers: map[string]string{"X-Api-Key": "hunter2"}, BearerToken: "tok"}
	sealed, err := old.Seal("acct", "srv1", sec)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) || bytes.Contains(sealed, []byte("tok")) {
		t.Fatal("a secret is in the sealed bytes in clear")
	}
	got, err := old.Open("acct", "srv1", sealed)
	if err != nil || got.Headers["X-Api-Key"] != "hunter2" || got.BearerToken != "tok" {
		t.Fatalf("open: %v %+v", err, got)
	}
	tamper := bytes.Clone(sealed)
	tamper[len(tamper)-1] ^= 1
	tests := []struct {
		name, account, id string
		sealer            *mcpremote.Sealer
		sealed            []byte
		want              error
	}{
		{"another server's row", "acct", "srv2", old, sealed, nil},
		{"another account", "acct2", "srv1", old, sealed, nil},
		{"tampered", "acct", "srv1", old, tamper, nil},
		{"unknown key", "acct", "srv1", must(mcpremote.NewSealer(key(2))), sealed, mcpremote.ErrUnknownKey},
		{"garbage", "acct", "srv1", old, []byte("not sealed"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.sealer.Open(tc.account, tc.id, tc.sealed)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want an error %v", err, tc.want)
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	old, _ := mcpremote.NewSealer(key(1))
	sealed, _ := old.Seal("acct", "srv1", mcpremote.Secrets{BearerToken: "tok"})
	rotated, err := mcpremote.NewSealer(key(2), key(1))
	if err != nil {
		t.Fatal(err)
	}
	if !rotated.Stale(sealed) {
		t.Fatal("a value sealed under the previous key must be stale")
	}
	got, err := rotated.Open("acct", "srv1", sealed)
	if err != nil || got.BearerToken != "tok" {
		t.Fatalf("open under the previous key: %v", err)
	}
	again, _ := rotated.Seal("acct", "srv1", got)
	if rotated.Stale(again) {
		t.Fatal("sealed again under the current key, still stale")
	}
	if _, err := old.Open("acct", "srv1", again); !errors.Is(err, mcpremote.ErrUnknownKey) {
		t.Fatalf("the old key alone opens the new value: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{"0101010101010101010101010101010101010101010101010101010101010101", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="} {
		if k, err := mcpremote.ParseKey(s); err != nil || !bytes.Equal(k, key(1)) {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"", "short", "AQEB", "zz01010101010101010101010101010101010101010101010101010101010101"} {
		if _, err := mcpremote.ParseKey(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func must(s *mcpremote.Sealer, err error) *mcpremote.Sealer {
	if err != nil {
		panic(err)
	}
	return s
}
