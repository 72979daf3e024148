package quickjs

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A snapshot is the linear memory of an instance right after qjs_init and
// the prelude. Everything the engine owns lives in linear memory (its heap,
// the runtime and context structs, the C globals pointing at them), so
// copying it into a fresh instance of the same binary, together with the
// shadow-stack pointer global, gives an engine in the same state without
// paying for qjs_init (about three quarters of a cold start). Per-instance
// state is applied afterwards by configure: limits, and the Math.random seed,
// which would otherwise be shared by every restored instance.
type snapshot struct {
	memory       []byte
	stackPointer uint64
	// The boxes the host keeps, valid in every restored copy.
	scratch, evalFile, undefined uint32
	helpers                      helpers
}

const stackPointerGlobal = "__stack_pointer"

// takeSnapshot builds the template instance and copies its memory.
func (m *Module) takeSnapshot(ctx context.Context) (*snapshot, error) {
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithSysWalltime().WithSysNanotime()
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("quickjs: snapshot: instantiate: %w", err)
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if err := m.initialize(ctx, mod); err != nil {
		return nil, fmt.Errorf("quickjs: snapshot: %w", err)
	}
	vm := &VM{mod: mod, rejections: map[uint32][2]uint32{}, soft: ctx}
	vctx := withVM(ctx, vm)
	if err := vm.fn.bind(mod); err != nil {
		return nil, err
	}
	if err := vm.initEngine(vctx); err != nil {
		return nil, fmt.Errorf("quickjs: snapshot: %w", err)
	}
	if len(vm.rejections) != 0 {
		return nil, errors.New("quickjs: snapshot: the prelude left a rejected promise")
	}
	sp, ok := mod.ExportedGlobal(stackPointerGlobal).(api.MutableGlobal)
	if !ok {
		return nil, fmt.Errorf("quickjs: snapshot: the binary does not export a mutable %s", stackPointerGlobal)
	}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		return nil, errors.New("quickjs: snapshot: cannot read memory")
	}
	return &snapshot{
		memory:       append([]byte(nil), mem...),
		stackPointer: sp.Get(),
		scratch:      vm.scratch,
		evalFile:     vm.evalFile,
		undefined:    vm.undefined,
		helpers:      vm.helpers,
	}, nil
}

// restore makes vm's fresh instance a copy of the template. With
// Options.Premapped the memory already holds the image (the caller's
// allocator mapped it) and growing to its size is enough.
func (s *snapshot) restore(vm *VM) error {
	mem := vm.mod.Memory()
	if size := uint32(len(s.memory)); mem.Size() < size {
		if _, ok := mem.Grow((size - mem.Size() + 65535) / 65536); !ok {
			return fmt.Errorf("%w: cannot grow memory to the snapshot's %d bytes", ErrMemory, size)
		}
	}
	if !vm.opts.Premapped && !mem.Write(0, s.memory) {
		return errors.New("quickjs: snapshot: cannot write memory")
	}
	sp, ok := vm.mod.ExportedGlobal(stackPointerGlobal).(api.MutableGlobal)
	if !ok {
		return fmt.Errorf("quickjs: the binary does not export a mutable %s", stackPointerGlobal)
	}
	sp.Set(s.stackPointer)
	vm.scratch, vm.evalFile, vm.undefined, vm.helpers = s.scratch, s.evalFile, s.undefined, s.helpers
	return nil
}
