package wire

import "testing"

// callBody is an MCP tools/call request as clients send it.
var callBody = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_time","arguments":{"timezone":"Europe/Berlin","format":"rfc3339","items":[1,2.5,-3e2,true,null,{"k":"v\u00e9"}]},"_meta":{"progressToken":17}}}`)

func BenchmarkCheckDepth(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckDepth(callBody, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := walk(callBody, 2); err != nil {
			b.Fatal(err)
		}
	}
}
