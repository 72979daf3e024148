package v1

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
)

// The embedded ranks are the loader module's cl100k_base file byte for
// byte, and nothing else loads.
func TestEmbeddedRanksAreCl100kBase(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(cl100kRanks))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != cl100kSHA256 {
		t.Fatalf("embedded ranks have SHA-256 %x, want %s", sum, cl100kSHA256)
	}
	ranks, err := rankLoader{}.LoadTiktokenBpe("/any/folder/cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 100256 || ranks["hello"] != 15339 {
		t.Fatalf("%d ranks, hello=%d; want 100256 ranks, hello=15339", len(ranks), ranks["hello"])
	}
	if _, err := (rankLoader{}).LoadTiktokenBpe("o200k_base.tiktoken"); err == nil {
		t.Fatal("another encoding loaded")
	}
}
