package loop

import (
	"testing"

	"github.com/toolhost/toolhost/catalog"
)

// overUses fails, without running, the calls of a tool past its max uses
// over the whole run (rounds counted together), and leaves unbounded tools
// alone.
func TestOverUsesFailsCallsPastTheToolsBound(t *testing.T) {
	cases := []struct {
		name   string
		limits map[string]int
		rounds [][]string // tool names of each round's calls
		failed [][]bool
	}{
		{"no bounds", nil, [][]string{{"web_search", "web_search"}}, [][]bool{{false, false}}},
		{"within", map[string]int{"web_search": 2}, [][]string{{"web_search", "web_search"}}, [][]bool{{false, false}}},
		{"past in one round", map[string]int{"web_search": 1}, [][]string{{"web_search", "run_code", "web_search"}}, [][]bool{{false, false, true}}},
		{"past across rounds", map[string]int{"web_search": 1, "run_code": 1}, [][]string{{"web_search"}, {"run_code", "web_search"}, {"run_code"}}, [][]bool{{false}, {false, true}, {true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			used := map[string]int{}
			for r, names := range tc.rounds {
				calls := make([]Call, len(names))
				for i, n := range names {
					calls[i] = Call{Name: n, ID: n}
				}
				overUses(tc.limits, used, calls, catalog.English)
				for i, c := range calls {
					failed := c.Code == CodeMaxUses
					if failed != tc.failed[r][i] {
						t.Errorf("round %d call %d (%s): failed %v, want %v", r, i, c.Name, failed, tc.failed[r][i])
					}
					if failed && (c.Status != StatusFailed || !c.IsError || c.Result == "") {
						t.Errorf("round %d call %d: %+v", r, i, c)
					}
				}
			}
		})
	}
}
