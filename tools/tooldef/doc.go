// Package tooldef holds the tool definitions of the tools API: tools an
// account describes itself (name, description, JSON Schema parameters,
// side-effect level, allowed slots, a handler), stored per account.
//
// Invariants:
//   - A definition belongs to one account; every lookup is by (account, id),
//     so another account's definition is simply not found.
//   - (name, source, source_id) is unique within an account (a null
//     source_id is stored as ""); other accounts may reuse any name.
//   - The stores keep what they are given; validation (Validate) and the
//     script-handler gate are the callers' (server/admin, the pipeline).
package tooldef
