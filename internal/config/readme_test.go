package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEDocumentsEverySetting keeps the README's configuration table in
// step with Settings.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, s := range Settings {
		row := "| `" + s.Env + "` | `-" + s.Flag + "` |"
		require.True(t, strings.Contains(string(readme), row), "README.md lacks the row for %s (%q)", s.Env, row)
	}
}
