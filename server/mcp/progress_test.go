package mcp

import (
	"math"
	"slices"
	"sync"
	"testing"
)

func TestIncreasingPassesOnlyRisingProgress(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reports []float64
		passed  []float64
	}{
		{"rising", []float64{0, 1, 2}, []float64{0, 1, 2}},
		{"the approval wait's 0, then the tool's 0", []float64{0, 0, 0.5, 1}, []float64{0, 0.5, 1}},
		{"rounded timings repeat", []float64{10, 10, 20, 20, 20, 30}, []float64{10, 20, 30}},
		{"a step back", []float64{1, 3, 2, 4}, []float64{1, 3, 4}},
		{"NaN is never above", []float64{1, math.NaN(), 2}, []float64{1, 2}},
		{"nor a first report", []float64{math.NaN(), 0}, []float64{0}},
		{"a first negative report", []float64{-1, -1, 0}, []float64{-1, 0}},
		{"none", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []float64
			p := increasing(func(progress, _ float64, _ string) { got = append(got, progress) })
			for _, r := range tt.reports {
				p(r, 0, "")
			}
			if !slices.Equal(got, tt.passed) {
				t.Fatalf("passed %v, want %v", got, tt.passed)
			}
		})
	}
}

// Reports from several goroutines: what is passed on still rises.
func TestIncreasingHoldsUnderConcurrentReports(t *testing.T) {
	var got []float64
	p := increasing(func(progress, _ float64, _ string) { got = append(got, progress) })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				p(float64(i*8+g), 0, "")
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("report %d: %v after %v", i, got[i], got[i-1])
		}
	}
	if len(got) == 0 {
		t.Fatal("nothing passed on")
	}
}
