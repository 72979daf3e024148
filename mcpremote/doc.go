// Package mcpremote holds the remote MCP servers an account registers with
// toolhost: the entity (name, URL, auth, per-tool overrides), its
// validation, the storage contract with an in-memory store, the last
// tools/list snapshot of each server, and the sealing of its secrets.
//
// Invariants:
//   - A server belongs to one account; every lookup is by (account, id), so
//     another account's server is simply not found. Its name is unique
//     within the account and is the namespace of its tools (NAME__tool).
//   - Secrets (header values, the bearer token, the OAuth client secret,
//     the tokens of a user's consent)
//     never sit in a Server in clear: the stores keep only Sealed, the
//     AES-GCM ciphertext made by a Sealer under the server key, and only
//     Sealer.Open turns it back into Secrets for the client that dials.
//   - The stores keep what they are given; validation (Input.Apply) and the
//     SSRF policy of the URL are the callers'.
package mcpremote
