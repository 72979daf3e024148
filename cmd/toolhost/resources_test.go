package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP resources toolhost://executions/{id} of `toolhost serve` with API
// keys: a key reads and lists its own account's executions (on any
// replica), and another account's key gets "not found" for the same URI.
func TestMCPExecutionResourcesFollowTheKeysAccount(t *testing.T) {
	bin := buildBinary(t)
	for name, reps := range topologies(t, bin) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			admin := bootstrapSecret(t, reps[0])
			acme := createKey(t, reps[0], admin, "acme", nil)
			beta := createKey(t, reps[0], admin, "beta", nil)
			res, err := mcpSession(t, reps[0].addr, acme).CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6}})
			if err != nil || res.IsError {
				t.Fatalf("roll_dice: %v %+v", err, res)
			}
			uri := "toolhost://executions/" + res.Meta["toolhost/execution_id"].(string)

			reader := reps[len(reps)-1] // the other replica when there are two
			own := mcpSession(t, reader.addr, acme)
			list, err := own.ListResources(ctx, nil)
			if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != uri {
				t.Fatalf("acme's list: %v %+v", err, list)
			}
			read, err := own.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				AccountID string `json:"account_id"`
				Status    string `json:"status"`
			}
			if err := json.Unmarshal([]byte(read.Contents[0].Text), &rec); err != nil || rec.AccountID != "acme" || rec.Status != "success" {
				t.Fatalf("record: %v %s", err, read.Contents[0].Text)
			}

			other := mcpSession(t, reader.addr, beta)
			if list, err := other.ListResources(ctx, nil); err != nil || len(list.Resources) != 0 {
				t.Fatalf("beta's list: %v %+v", err, list)
			}
			_, err = other.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message != "Resource not found" {
				t.Fatalf("beta reads acme's execution: %v %+v", err, read)
			}
		})
	}
}
