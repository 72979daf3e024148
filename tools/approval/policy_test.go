package approval

import (
	"testing"
)

func TestResolveTakesTheStricterPolicyAndSaysWhy(t *testing.T) {
	tests := []struct {
		name         string
		account      Policy
		basis        string
		session      Policy
		want         Policy
		wantBasis    string
		irreversible bool // whether an irreversible call is confirmed
		sandbox      bool // whether a sandbox call is confirmed
	}{
		{"NothingSet", "", "", "", BySideEffect, BasisPlatform, true, false},
		{"AccountNever", Never, BasisAccountOverride, "", Never, BasisAccountOverride, false, false},
		{"ServerAlways", Always, BasisServerDefault, "", Always, BasisServerDefault, true, true},
		{"SessionTightens", Never, BasisAccountOverride, Always, Always, BasisSession, true, true},
		{"SessionTightensTheDefault", "", "", Always, Always, BasisSession, true, true},
		{"SessionCannotLoosen", Always, BasisAccountOverride, Never, Always, BasisAccountOverride, true, true},
		{"SessionCannotLoosenTheDefault", "", "", Never, BySideEffect, BasisPlatform, true, false},
		{"SessionSameAsAccountKeepsTheAccountsBasis", BySideEffect, BasisServerDefault, BySideEffect, BySideEffect, BasisServerDefault, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b := Resolve(tc.account, tc.basis, tc.session)
			if p != tc.want || b != tc.wantBasis {
				t.Fatalf("Resolve = %s %s, want %s %s", p, b, tc.want, tc.wantBasis)
			}
			if p.Confirms("irreversible") != tc.irreversible || p.Confirms("sandbox") != tc.sandbox || p.Confirms("none") != (p == Always) {
				t.Errorf("%s confirms irreversible=%v sandbox=%v none=%v", p, p.Confirms("irreversible"), p.Confirms("sandbox"), p.Confirms("none"))
			}
		})
	}
}

func TestParsePolicyRefusesAnythingElse(t *testing.T) {
	for _, s := range []string{"", "Never", "ALWAYS", " never", "never\u200b", "side-effect", "true", `"never"`, "nevernevernevernevernevernevernevernevernevernever"} {
		if p, err := ParsePolicy(s); err == nil {
			t.Errorf("ParsePolicy(%q) = %s", s, p)
		}
	}
	for _, p := range Policies {
		if got, err := ParsePolicy(string(p)); err != nil || got != p {
			t.Errorf("ParsePolicy(%s) = %s, %v", p, got, err)
		}
	}
}

func TestIDs(t *testing.T) {
	id := NewID()
	if !ValidID(id) || NewID() == id {
		t.Fatalf("NewID = %s", id)
	}
	for _, s := range []string{"", "apr_", "apr_0000000000000000000000000", "APR_000000000000000000000000", "apr_00000000000000000000000g", "apr_../../../etc/passwd00000"} {
		if ValidID(s) {
			t.Errorf("ValidID(%q)", s)
		}
	}
}
