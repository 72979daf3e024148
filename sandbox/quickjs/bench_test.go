package quickjs

import (
	"context"
	"testing"
	"time"
)

// reportCPU adds the process CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkInstantiateEval is a cold run: a fresh instance, 1+2, closed.
func BenchmarkInstantiateEval(b *testing.B) {
	m := newModule(b, true)
	ctx := context.Background()
	cpu := processCPU()
	for b.Loop() {
		vm, err := m.Instantiate(ctx, Options{MemoryLimit: 200 << 20})
		if err != nil {
			b.Fatal(err)
		}
		res, err := vm.Eval(ctx, "1+2")
		if err != nil || string(res.Value) != "3" {
			b.Fatalf("%v %+v", err, res)
		}
		_ = vm.Close(ctx)
	}
	reportCPU(b, cpu)
}

// BenchmarkInstantiate is the part a warm pool does ahead of time, from the
// snapshot (what Instantiate does) and with the engine's own start-up.
func BenchmarkInstantiate(b *testing.B) {
	restored := newModule(b, true)
	fresh := *restored
	fresh.snap = nil
	for _, bc := range []struct {
		name string
		m    *Module
	}{{"snapshot", restored}, {"qjs_init", &fresh}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			cpu := processCPU()
			for b.Loop() {
				vm, err := bc.m.Instantiate(ctx, Options{MemoryLimit: 200 << 20})
				if err != nil {
					b.Fatal(err)
				}
				_ = vm.Close(ctx)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkEvalWarm is what a run costs when the pool hands over a
// pre-instantiated VM: Eval of 1+2 and Close.
func BenchmarkEvalWarm(b *testing.B) {
	m := newModule(b, true)
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		vm, err := m.Instantiate(ctx, Options{MemoryLimit: 200 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := processCPU()
		res, err := vm.Eval(ctx, "1+2")
		if err != nil || string(res.Value) != "3" {
			b.Fatalf("%v %+v", err, res)
		}
		_ = vm.Close(ctx)
		cpu += processCPU() - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkLoop measures what the hard stop (WithCloseOnContextDone) costs
// a JavaScript-heavy program: one million iterations of a loop body.
func BenchmarkLoop(b *testing.B) {
	const code = "(() => { let x = 0; for (let i = 0; i < 1e6; i++) { x = (x + i * 7) % 1000003 } return x })()"
	for _, hard := range []bool{false, true} {
		name := "closeOnContextDone=false"
		if hard {
			name = "closeOnContextDone=true"
		}
		b.Run(name, func(b *testing.B) {
			m := newModule(b, hard)
			ctx := context.Background()
			vm, err := m.Instantiate(ctx, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close(ctx)
			cpu := processCPU()
			for b.Loop() {
				res, err := vm.Eval(ctx, code)
				if err != nil || res.Exception != "" {
					b.Fatalf("%v %+v", err, res)
				}
			}
			reportCPU(b, cpu)
		})
	}
}
