// Package keys is toolhost's tenancy and metering: accounts, API keys, the
// per-key MCP limits (calls per minute, concurrent calls) and usage against a
// monthly cap of paid units.
//
// Invariants:
//   - A key's secret is shown once, at creation, and stored only as its
//     SHA-256 hash. Secrets are 192 random bits, so a fast hash is enough: no
//     password-style stretching is needed to resist guessing.
//   - Limits are checked before a call executes; a refused call never runs.
//   - The per-key MCP limits apply only to MCP calls (face "mcp"); hosted
//     calls inside a /v1 loop are governed by the request, as the seed says.
//     Paid units count toward the monthly cap on both faces.
//   - Limit state shared by replicas lives in Redis (RedisLimiter); a single
//     process may use MemoryLimiter. Usage is durable in the Store.
//
// The package declares the Store it needs; package store implements it for
// SQLite and PostgreSQL.
package keys
