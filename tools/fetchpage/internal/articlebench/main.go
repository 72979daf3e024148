// Command articlebench measures fetch_page's HTML extraction on the
// article-extraction benchmark published by Zyte (scrapinghub/
// article-extraction-benchmark): 181 pages with the expected article body.
// It scores with the benchmark's own metric (evaluate.py): token 4-gram
// shingles (tokens = \w+ runs), per-page TP/FP/FN normalized to sum 1,
// precision and recall averaged over pages, F1 from the two averages, and
// a bootstrap standard deviation.
//
// The benchmark's data is not part of this repository; point -dir at a
// checkout of it:
//
//	go run ./tools/fetchpage/internal/articlebench -dir /path/to/article-extraction-benchmark
package main

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"toolhost/tools/fetchpage"
)

func main() {
	dir := flag.String("dir", os.Getenv("ARTICLE_BENCHMARK_DIR"), "checkout of scrapinghub/article-extraction-benchmark (default $ARTICLE_BENCHMARK_DIR)")
	format := flag.String("format", "text", "which output to score: text (format=text), markdown-text (the content chosen for format=markdown, scored as text) or markdown (the Markdown itself, link URLs included)")
	nBoot := flag.Int("bootstrap", 1000, "bootstrap resamples for the ± figures")
	verbose := flag.Bool("v", false, "print the score of every page")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "articlebench: -dir (or ARTICLE_BENCHMARK_DIR) must name a checkout of the benchmark")
		os.Exit(2)
	}
	if err := run(*dir, *format, *nBoot, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "articlebench:", err)
		os.Exit(1)
	}
}

type truth struct {
	ArticleBody string `json:"articleBody"`
	URL         string `json:"url"`
}

func run(dir, format string, nBoot int, verbose bool) error {
	b, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return err
	}
	var gt map[string]truth
	if err := json.Unmarshal(b, &gt); err != nil {
		return fmt.Errorf("ground-truth.json: %w", err)
	}
	keys := make([]string, 0, len(gt))
	for k := range gt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var scores [][3]float64
	var acc []float64
	var bytesIn int64
	var elapsed time.Duration
	for _, k := range keys {
		page, err := readGzip(filepath.Join(dir, "html", k+".html.gz"))
		if err != nil {
			return err
		}
		bytesIn += int64(len(page))
		u, _ := url.Parse(gt[k].URL)
		start := time.Now()
		art, err := fetchpage.ExtractHTML(page, u, format != "text")
		elapsed += time.Since(start)
		pred := ""
		if err == nil {
			pred = art.Text
			if format == "markdown" {
				pred = art.Markdown
			}
		}
		pred = strings.ReplaceAll(pred, "\u00ad", "")
		s := shingleMatch(gt[k].ArticleBody, pred)
		scores = append(scores, s)
		a := 0.0
		if strings.Join(tokenize(gt[k].ArticleBody), " ") == strings.Join(tokenize(pred), " ") {
			a = 1
		}
		acc = append(acc, a)
		if verbose {
			p, r, _ := metrics([][3]float64{s})
			fmt.Printf("%s  P=%.3f R=%.3f  %s\n", k[:12], p, r, gt[k].URL)
		}
	}
	p, r, f1 := metrics(scores)
	var bp, br, bf, ba []float64
	rng := rand.New(rand.NewPCG(1, 2))
	for range nBoot {
		sample := make([][3]float64, len(scores))
		sa := 0.0
		for i := range sample {
			j := rng.IntN(len(scores))
			sample[i] = scores[j]
			sa += acc[j]
		}
		x, y, z := metrics(sample)
		bp, br, bf, ba = append(bp, x), append(br, y), append(bf, z), append(ba, sa/float64(len(sample)))
	}
	fmt.Printf("pages %d, format %s, extraction %.1f s for %.1f MB\n", len(keys), format, elapsed.Seconds(), float64(bytesIn)/1e6)
	fmt.Printf("F1 %.3f ± %.3f  precision %.3f ± %.3f  recall %.3f ± %.3f  accuracy %.3f ± %.3f\n",
		f1, stdev(bf), p, stdev(bp), r, stdev(br), mean(acc), stdev(ba))
	return nil
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

// token matches Python's \w with re.UNICODE: letters, digits, underscore.
var token = regexp.MustCompile(`[\p{L}\p{N}_]+`)

func tokenize(s string) []string { return token.FindAllString(s, -1) }

func shingles(s string) map[string]int {
	t := tokenize(s)
	out := map[string]int{}
	for i := 0; i < max(1, len(t)-4+1); i++ {
		end := min(i+4, len(t))
		if end > i {
			out[strings.Join(t[i:end], "\x00")]++
		}
	}
	return out
}

// shingleMatch is string_shingle_matching of evaluate.py.
func shingleMatch(truth, pred string) [3]float64 {
	ts, ps := shingles(truth), shingles(pred)
	var tp, fp, fn float64
	seen := map[string]bool{}
	for _, m := range []map[string]int{ts, ps} {
		for k := range m {
			if seen[k] {
				continue
			}
			seen[k] = true
			tc, pc := float64(ts[k]), float64(ps[k])
			tp += math.Min(tc, pc)
			fp += math.Max(0, pc-tc)
			fn += math.Max(0, tc-pc)
		}
	}
	if s := tp + fp + fn; s > 0 {
		return [3]float64{tp / s, fp / s, fn / s}
	}
	return [3]float64{}
}

// metrics is metrics_from_tp_fp_fns of evaluate.py.
func metrics(s [][3]float64) (p, r, f1 float64) {
	var ps, rs []float64
	for _, x := range s {
		tp, fp, fn := x[0], x[1], x[2]
		if tp+fp > 0 {
			ps = append(ps, score(tp, fp, fn))
		}
		if tp+fn > 0 {
			rs = append(rs, score(tp, fn, fp))
		}
	}
	p, r = mean(ps), mean(rs)
	if p+r > 0 {
		f1 = 2 * p * r / (p + r)
	}
	return p, r, f1
}

// score is precision_score (or recall_score with fp and fn swapped).
func score(tp, fp, fn float64) float64 {
	if fp == 0 && fn == 0 {
		return 1
	}
	if tp == 0 && fp == 0 {
		return 0
	}
	return tp / (tp + fp)
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func stdev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}
