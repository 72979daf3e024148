package main

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
)

// The scoring of the article-extraction benchmark (its evaluate.py): token
// 4-gram shingles (tokens are \w+ runs), per-page TP/FP/FN normalised to
// sum 1, precision and recall averaged over pages, F1 from the two
// averages, and a bootstrap standard deviation.

// token matches Python's \w with re.UNICODE: letters, digits, underscore.
var wordToken = regexp.MustCompile(`[\p{L}\p{N}_]+`)

func tokenize(s string) []string { return wordToken.FindAllString(s, -1) }

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

// shingleMatch is string_shingle_matching of evaluate.py: TP, FP, FN
// normalised to sum 1.
func shingleMatch(truth, pred string) [3]float64 {
	ts, ps := shingles(truth), shingles(pred)
	var tp, fp, fn float64
	for k, tc := range ts {
		pc := ps[k]
		tp += float64(min(tc, pc))
		fn += float64(max(0, tc-pc))
	}
	for k, pc := range ps {
		fp += float64(max(0, pc-ts[k]))
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

// summary is the benchmark's figures for one run.
type summary struct {
	P, R, F1, Acc         float64
	SdP, SdR, SdF1, SdAcc float64
}

func summarise(scores [][3]float64, exact []float64, nBoot int) summary {
	var s summary
	s.P, s.R, s.F1 = metrics(scores)
	s.Acc = mean(exact)
	var bp, br, bf, ba []float64
	rng := rand.New(rand.NewPCG(1, 2))
	for range nBoot {
		sample := make([][3]float64, len(scores))
		sa := 0.0
		for i := range sample {
			j := rng.IntN(len(scores))
			sample[i] = scores[j]
			sa += exact[j]
		}
		x, y, z := metrics(sample)
		bp, br, bf, ba = append(bp, x), append(br, y), append(bf, z), append(ba, sa/float64(len(sample)))
	}
	s.SdP, s.SdR, s.SdF1, s.SdAcc = stdev(bp), stdev(br), stdev(bf), stdev(ba)
	return s
}

func exactMatch(truth, pred string) float64 {
	if strings.Join(tokenize(truth), " ") == strings.Join(tokenize(pred), " ") {
		return 1
	}
	return 0
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

// Markdown normalisation: what a reader sees of the Markdown, as text, so
// that it can be scored against the benchmark's plain-text truth. Link
// targets and image references are not words of the article; everything
// else (headings, list items, table cells, code, math) stays.
var (
	mdImage      = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink       = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\]]*\])*)\]\((?:[^()]|\([^)]*\))*\)`)
	mdFootRef    = regexp.MustCompile(`\[\^[^\]]+\]`)
	mdFence      = regexp.MustCompile("(?m)^(```|~~~)[A-Za-z0-9_+#.-]*\\s*$")
	mdAutolink   = regexp.MustCompile(`<https?://[^>]+>`)
	mdEscape     = regexp.MustCompile(`\\([!-/:-@\[-` + "`" + `{-~])`)
	mdFootnoteDf = regexp.MustCompile(`(?m)^\[\^[^\]]+\]:.*$`)
)

func normaliseMarkdown(md string) string {
	md = mdFootnoteDf.ReplaceAllString(md, "")
	md = mdImage.ReplaceAllString(md, "")
	md = mdLink.ReplaceAllString(md, "$1")
	md = mdFootRef.ReplaceAllString(md, "")
	md = mdFence.ReplaceAllString(md, "")
	md = mdAutolink.ReplaceAllString(md, "")
	md = mdEscape.ReplaceAllString(md, "$1")
	return md
}
