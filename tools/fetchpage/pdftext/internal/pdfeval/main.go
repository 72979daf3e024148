// Command pdfeval compares pdftext with pdftotext (poppler-utils) on real
// PDFs: for each file it prints the word 4-gram shingle agreement and the
// time of both extractors, then the totals. It is the measurement behind the
// README's "PDF text extraction" table.
//
//	go run ./tools/fetchpage/pdftext/internal/pdfeval /usr/share/R/doc/manual/R-*.pdf
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/tools/fetchpage/pdftext"
	"github.com/toolhost/toolhost/tools/fetchpage/pdftext/internal/shingle"
)

func main() {
	runs := flag.Int("runs", 3, "timing runs per extractor (the fastest counts)")
	dump := flag.String("dump", "", "directory to write both texts into, for diffing")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the pdftext runs to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: pdfeval [-runs n] [-dump dir] file.pdf...")
		os.Exit(2)
	}
	fmt.Printf("| document | pages | agreement | pdftext CPU | pdftotext CPU | CPU ratio | pdftext wall | pdftotext wall | wall ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var sumOurs, sumTheirs, sumOursWall, sumTheirsWall time.Duration
	var sumAgree float64
	for _, path := range flag.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var doc *pdftext.Document
		ours, oursWall := best(*runs, func() (time.Duration, error) {
			before := selfCPU()
			doc, err = pdftext.Extract(context.Background(), data, pdftext.Options{})
			return selfCPU() - before, err
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		var want []byte
		theirs, theirsWall := best(*runs, func() (time.Duration, error) {
			cmd := exec.Command("pdftotext", "-enc", "UTF-8", path, "-")
			want, err = cmd.Output()
			if err != nil {
				return 0, err
			}
			return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "pdftotext %s: %v\n", path, err)
			os.Exit(1)
		}
		got := strings.Join(doc.Pages, "\n\f")
		agree := shingle.Agreement(got, string(want))
		if *dump != "" {
			base := filepath.Join(*dump, strings.TrimSuffix(filepath.Base(path), ".pdf"))
			_ = os.WriteFile(base+".pdftext.txt", []byte(got), 0o644)
			_ = os.WriteFile(base+".pdftotext.txt", bytes.ReplaceAll(want, []byte("\f"), []byte("\n\f")), 0o644)
		}
		sumOurs += ours
		sumTheirs += theirs
		sumOursWall += oursWall
		sumTheirsWall += theirsWall
		sumAgree += agree
		fmt.Printf("| %s | %d | %.3f | %.3f s | %.3f s | %.2f× | %.3f s | %.3f s | %.2f× |\n", filepath.Base(path), doc.NumPages, agree,
			ours.Seconds(), theirs.Seconds(), ours.Seconds()/theirs.Seconds(),
			oursWall.Seconds(), theirsWall.Seconds(), oursWall.Seconds()/theirsWall.Seconds())
	}
	n := float64(flag.NArg())
	fmt.Printf("| **all** | | %.3f (mean) | %.3f s | %.3f s | %.2f× | %.3f s | %.3f s | %.2f× |\n", sumAgree/n,
		sumOurs.Seconds(), sumTheirs.Seconds(), sumOurs.Seconds()/sumTheirs.Seconds(),
		sumOursWall.Seconds(), sumTheirsWall.Seconds(), sumOursWall.Seconds()/sumTheirsWall.Seconds())
}

// selfCPU returns the CPU time (user and system) this process has used,
// garbage collection included. On a shared machine CPU time is steadier
// than wall time, so both are reported.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// best runs f n times and returns the smallest CPU time f reports and the
// smallest wall time.
func best(n int, f func() (time.Duration, error)) (minCPU, minWall time.Duration) {
	for i := 0; i < max(n, 1); i++ {
		start := time.Now()
		used, err := f()
		if err != nil {
			return 0, 0
		}
		wall := time.Since(start)
		if i == 0 || used < minCPU {
			minCPU = used
		}
		if i == 0 || wall < minWall {
			minWall = wall
		}
	}
	return minCPU, minWall
}
