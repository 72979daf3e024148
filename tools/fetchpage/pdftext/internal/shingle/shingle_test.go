package shingle

import (
	"math"
	"testing"
)

func TestAgreement(t *testing.T) {
	tests := []struct {
		name      string
		got, want string
		agree     float64
	}{
		{"identical whatever the line breaks", "a b c d e\nf", "a b\nc d e f", 1},
		{"disjoint", "a b c d e", "v w x y z", 0},
		{"one word changed in the middle", "a b c d e f g", "a b c X e f g", 0},
		{"one extra word at the end", "a b c d e", "a b c d", 2 * 0.5 * 1 / 1.5},
		{"repeated shingles count as often as they occur", "a b c d a b c d", "a b c d", 2 * 0.2 * 1 / 1.2},
		{"short equal texts", "a b", "a  b", 1},
		{"short different texts", "a b", "a c", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Agreement(tt.got, tt.want); math.Abs(got-tt.agree) > 1e-9 {
				t.Errorf("Agreement = %v, want %v", got, tt.agree)
			}
		})
	}
}
