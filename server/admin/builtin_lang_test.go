package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
)

// GET /tools/builtin in each language, golden: the descriptions of the
// tools and of their parameters follow Accept-Language (English without
// a preference, as the seed's example).
func TestBuiltinListFollowsAcceptLanguage(t *testing.T) {
	ex, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore()}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	specs := append(ex.Catalog().List(), ex.SessionSpecs()...)
	defs := &admin.Definitions{Builtins: func() []catalog.Spec { return specs }}
	srv := tenantServer(t, defs.Routes())
	for _, tc := range []struct{ golden, header string }{
		{"builtin.en.json", ""}, {"builtin.en.json", "en-GB,en;q=0.8"}, {"builtin.zh.json", "zh-CN"}, {"builtin.zh.json", "fr"},
	} {
		t.Run(tc.golden+" "+tc.header, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/tools/builtin", nil)
			if tc.header != "" {
				req.Header.Set("Accept-Language", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var pretty bytes.Buffer
			if resp.StatusCode != 200 || json.Indent(&pretty, body, "", "  ") != nil {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			pretty.WriteByte('\n')
			file := filepath.Join("testdata", "lang", tc.golden)
			if *update {
				_ = os.MkdirAll(filepath.Dir(file), 0o755)
				if err := os.WriteFile(file, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Fatalf("%s: got\n%s", file, pretty.Bytes())
			}
		})
	}
}
