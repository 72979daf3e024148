package catalog

import "testing"

func TestRequestLang(t *testing.T) {
	tests := []struct {
		face   Face
		header string
		want   Lang
	}{
		{FaceMCP, "", English},
		{FaceHosted, "", Chinese},
		{FaceMCP, "*", English}, // no preference: Node's fetch default
		{FaceHosted, "*", Chinese},
		{FaceHosted, " * ", Chinese},
		{FaceHosted, "en", English},
		{FaceHosted, "en-US,en;q=0.9", English},
		{FaceHosted, "EN-gb", English},
		{FaceMCP, "zh-CN", Chinese},
		{FaceMCP, "fr-FR", Chinese}, // the seed: anything not starting with en is Chinese
		{FaceHosted, "  en-US", English},
		{FaceMCP, "e", Chinese},
		{FaceMCP, "ｅｎ", Chinese}, // fullwidth letters are not "en"
		{FaceMCP, "\u200ben", Chinese},
		{FaceREST, "", English},
		{FaceREST, "*", English},
		{FaceREST, "zh-CN", Chinese},
		{FaceREST, "en-US", English},
		{Face("unknown"), "", English},
	}
	for _, tt := range tests {
		if got := RequestLang(tt.face, tt.header); got != tt.want {
			t.Errorf("RequestLang(%s, %q) = %s, want %s", tt.face, tt.header, got, tt.want)
		}
	}
}
