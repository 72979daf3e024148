package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/sandbox/quickjs"
)

// BenchmarkJSLoopCloseOnContextDone measures what the hard deadline costs a
// CPU-bound JavaScript loop: wazero.WithCloseOnContextDone makes compiled
// code check for a closed module on every loop back-edge and call.
//
//	go test -run '^$' -bench JSLoop -benchtime 5x ./sandbox/
func BenchmarkJSLoopCloseOnContextDone(b *testing.B) {
	wasm, err := os.ReadFile(filepath.Join(runtimesDir(b), JavaScriptFile))
	if err != nil {
		b.Fatal(err)
	}
	for _, hard := range []bool{false, true} {
		name := "soft-interrupt-only"
		if hard {
			name = "close-on-context-done"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			cache, err := wazero.NewCompilationCacheWithDir(testCacheDir)
			if err != nil {
				b.Fatal(err)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(hard))
			defer rt.Close(ctx)
			m, err := quickjs.Compile(ctx, rt, wasm)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				vm, err := m.Instantiate(ctx, quickjs.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := vm.Eval(ctx, "let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; s")
				b.StopTimer()
				if err != nil || res.Exception != "" {
					b.Fatal(err, res)
				}
				_ = vm.Close(ctx)
				b.StartTimer()
			}
		})
	}
}
