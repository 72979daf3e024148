// Package shingle measures how much two texts agree, as the F1 score of
// their word 4-gram shingles (multisets). It is how pdftext is compared with
// pdftotext: reading order, spacing, hyphenation and ligatures all show up
// as broken shingles, while line breaks and blank lines do not matter.
package shingle

import "strings"

// Size is the number of words in a shingle.
const Size = 4

// Agreement returns the F1 score of the word 4-gram multisets of got and
// want, in [0, 1]. Two texts too short to have a shingle agree when their
// words are equal.
func Agreement(got, want string) float64 {
	g, w := counts(got), counts(want)
	if len(g) == 0 && len(w) == 0 {
		if strings.Join(strings.Fields(got), " ") == strings.Join(strings.Fields(want), " ") {
			return 1
		}
		return 0
	}
	var ng, nw, common int
	for k, c := range g {
		ng += c
		common += min(c, w[k])
	}
	for _, c := range w {
		nw += c
	}
	if common == 0 {
		return 0
	}
	p := float64(common) / float64(ng)
	r := float64(common) / float64(nw)
	return 2 * p * r / (p + r)
}

func counts(s string) map[string]int {
	words := strings.Fields(s)
	m := map[string]int{}
	for i := 0; i+Size <= len(words); i++ {
		m[strings.Join(words[i:i+Size], " ")]++
	}
	return m
}
