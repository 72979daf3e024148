package store_test

import (
	"testing"

	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/idempotency/idempotencytest"
)

func TestIdempotencySQLite(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T, lim idempotency.Limits) idempotency.Store { return OpenSQLite(t).Idempotency(lim) })
}

func TestIdempotencyPostgres(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T, lim idempotency.Limits) idempotency.Store { return OpenPostgres(t).Idempotency(lim) })
}
