package bench

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line string
		want       procInfo
		ok         bool
	}{
		{"plain", "4242 (chromium) S 4200 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 9 0 123456 3000000 500",
			procInfo{4242, 4200, 4242, 123456}, true},
		{"spaces and parentheses in the name", "77 (Web Content (x) y) R 1 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 1 1",
			procInfo{77, 1, 70, 99}, true},
		{"truncated", "77 (x) R 1 70 70", procInfo{}, false},
		{"garbage", "hello", procInfo{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseProcStat([]byte(tt.line))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTree(t *testing.T) {
	t.Parallel()
	procs := []procInfo{
		{pid: 1, ppid: 0}, {pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 12, ppid: 11},
		{pid: 13, ppid: 10}, {pid: 20, ppid: 1},
	}
	require.ElementsMatch(t, []int{10, 11, 12, 13}, tree(procs, 10))
	require.ElementsMatch(t, []int{10, 20}, childrenOf(procs, 1))
	require.Equal(t, []int{99}, tree(procs, 99))
}

func TestDescendantsAndKillSurvivors(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	procs := descendants(cmd.Process.Pid)
	require.Len(t, procs, 1)
	require.Equal(t, os.Getpid(), procs[0].ppid)
	require.NotZero(t, procs[0].start)

	// A record of another process under the same pid is left alone.
	stale := procs[0]
	stale.start++
	killSurvivors([]procInfo{stale})
	select {
	case <-done:
		t.Fatal("a process with another start time was killed")
	default:
	}
	killSurvivors(procs)
	require.Error(t, <-done, "killed")
}

func TestTreePSS(t *testing.T) {
	t.Parallel()
	n, err := treePSS(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, n)
	_, err = treePSS(1 << 30)
	require.Error(t, err)
}
