package journal

import "testing"

// A write spooled before definitions were journaled as the preset
// provider ("custom" then) reaches the store with the seed's value; the
// seed's values pass as they are.
func TestSpooledCustomProviderReadsBackAsPreset(t *testing.T) {
	for in, want := range map[string]string{"custom": ProviderPreset, ProviderBuiltin: ProviderBuiltin,
		ProviderPreset: ProviderPreset, ProviderMCP: ProviderMCP, ProviderUnknown: ProviderUnknown} {
		got, err := decodeWrite(appendWrite(nil, Write{Insert: true, Record: Record{ID: "a", ProviderType: in}}))
		if err != nil || got.Record.ProviderType != want {
			t.Errorf("spooled %q: read %q (%v), want %q", in, got.Record.ProviderType, err, want)
		}
	}
}
