package idempotency_test

import (
	"testing"

	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/idempotency/idempotencytest"
)

func TestMemoryStore(t *testing.T) {
	idempotencytest.Run(t, func(_ *testing.T, lim idempotency.Limits) idempotency.Store { return idempotency.NewMemory(lim) })
}
