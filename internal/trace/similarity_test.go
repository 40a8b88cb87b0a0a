package trace

import (
	"strings"
	"testing"
)

// TestNormalize checks the ASCII fast path of normalize against the
// general definition (lower case, whitespace collapsed).
func TestNormalize(t *testing.T) {
	for _, s := range []string{
		"", " ", "save", "Save", "save changes", "  Save\tChanges \n", "a  b", "a\vb\fc\rd",
		"already normal 42", "trailing ", " leading", "Ünïcode  Name", "nbsp\u00a0here", "x\u2028y", "bad\xffbyte",
	} {
		want := strings.Join(strings.Fields(strings.ToLower(s)), " ")
		if got := normalize(s); got != want {
			t.Errorf("normalize(%q) = %q, want %q", s, got, want)
		}
	}
}
