package pool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLaunchExitLeavesNoChildNorDir starts a "browser" that dies during
// start while a child it forked keeps writing into the user-data dir (as
// Chromium's zygote and helpers do when its main process is killed): launch
// fails, ends the child with it, and removes the dir for good.
func TestLaunchExitLeavesNoChildNorDir(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	bin := filepath.Join(t.TempDir(), "fake-chromium")
	script := `#!/bin/sh
for a in "$@"; do case "$a" in --user-data-dir=*) dir="${a#--user-data-dir=}";; esac; done
( while :; do mkdir -p "$dir/Default" 2>/dev/null; sleep 0.01; done ) &
sleep 0.3
exit 3
`
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := launch(ctx, bin, work)
	require.ErrorContains(t, err, "exited during start")
	// Given time to re-create the dir, a surviving child would.
	time.Sleep(300 * time.Millisecond)
	entries, err := os.ReadDir(work)
	require.NoError(t, err)
	require.Empty(t, entries, "the user-data dir is gone")
	require.Empty(t, processesNaming(work), "no child of the dead browser is left")
}

// processesNaming lists live processes whose command line or environment
// would lead to dir: here, the fake browser's children, whose command line
// is the shell's.
func processesNaming(dir string) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(filepath.Dir(f), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue
		}
		out = append(out, filepath.Base(filepath.Dir(f)))
	}
	return out
}
