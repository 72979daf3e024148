package v1

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed" // the rank file below
	"encoding/base64"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// cl100kRanks is cl100k_base.tiktoken, the byte-pair ranks of the
// estimate's encoding, gzipped: the file of tiktoken-go-loader v0.0.2
// (MIT; the ranks are OpenAI's tiktoken), SHA-256 cl100kSHA256 before
// compression. Only this encoding is embedded: the loader module embeds
// all four of its encodings (7 MB), of which the estimate reads one.
//
//go:embed cl100k_base.tiktoken.gz
var cl100kRanks []byte

const cl100kSHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

// rankLoader is the tiktoken.BpeLoader of the embedded ranks. It knows
// one file; asking for another is an error, never a download.
type rankLoader struct{}

func (rankLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	if path.Base(file) != estimateEncoding+".tiktoken" {
		return nil, fmt.Errorf("tokenizer: only %s is embedded, not %s", estimateEncoding, path.Base(file))
	}
	zr, err := gzip.NewReader(bytes.NewReader(cl100kRanks))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: embedded ranks: %w", err)
	}
	ranks := make(map[string]int, 100256)
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		tok, rank, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("tokenizer: embedded ranks: line %q", line)
		}
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: embedded ranks: %w", err)
		}
		r, err := strconv.Atoi(rank)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: embedded ranks: %w", err)
		}
		ranks[string(b)] = r
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer: embedded ranks: %w", err)
	}
	return ranks, nil
}
