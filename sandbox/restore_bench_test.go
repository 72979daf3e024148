package sandbox

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// procMemKiB reads fields (Pss, Private_Dirty, Rss, ...) of
// /proc/self/smaps_rollup, in KiB; nil where the file does not exist.
func procMemKiB(tb testing.TB) map[string]int64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[2] == "kB" {
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			m[strings.TrimSuffix(fs[0], ":")] = n
		}
	}
	return m
}

// BenchmarkPythonRestore measures starting a Python interpreter from the
// snapshot (instantiate, map the image, run _prepare up to its stdin read)
// and what a waiting instance costs in memory: proportional set size and
// private dirty pages per instance, with 32 of them waiting.
//
//	go test -run '^$' -bench PythonRestore -benchtime 200x ./sandbox/
func BenchmarkPythonRestore(b *testing.B) {
	s := newTestSandbox(b, Config{PythonPool: -1, JavaScriptPool: -1})
	ctx := context.Background()
	b.Run("start", func(b *testing.B) {
		for range b.N {
			p, err := s.py.start(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			p.discard()
			b.StartTimer()
		}
	})
	b.Run("print1", func(b *testing.B) {
		for range b.N {
			res, err := s.Run(ctx, Request{Language: Python, Code: "print(1)"})
			if err != nil || string(res.Stdout) != "1\n" {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("waiting-instance-memory", func(b *testing.B) {
		const n = 32
		for range b.N {
			// Collect and hand freed memory back to the OS now, rather
			// than waiting for the background scavenger to get to it.
			debug.FreeOSMemory()
			before := procMemKiB(b)
			ps := make([]*pyInstance, n)
			for i := range ps {
				p, err := s.py.start(ctx)
				if err != nil {
					b.Fatal(err)
				}
				ps[i] = p
			}
			runtime.GC()
			after := procMemKiB(b)
			for _, p := range ps {
				p.discard()
			}
			if before != nil {
				b.ReportMetric(float64(after["Pss"]-before["Pss"])/n, "pss-KiB/instance")
				b.ReportMetric(float64(after["Private_Dirty"]-before["Private_Dirty"])/n, "private-KiB/instance")
				b.ReportMetric(float64(after["Rss"]-before["Rss"])/n, "rss-KiB/instance")
			}
		}
	})
}
