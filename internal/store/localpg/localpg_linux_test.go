package localpg

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const helperDataDirEnv = "LOCALPG_TEST_HELPER_DATADIR"

// TestHelperStartAndHang is not a test: TestParentDeathStopsServer runs the
// test binary with it as a stand-in for a Wayfinder process that gets killed.
func TestHelperStartAndHang(t *testing.T) {
	dataDir := os.Getenv(helperDataDirEnv)
	if dataDir == "" {
		t.Skip("helper process only")
	}
	s, err := Start(t.Context(), Options{DataDir: dataDir, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("PID " + strconv.Itoa(s.pid) + "\n")
	time.Sleep(time.Minute) // killed by the parent test long before this
}

// TestParentDeathStopsServer checks the parent-death signal: when the process
// that started postgres is SIGKILLed, postgres shuts down on its own, even
// though it runs under different credentials (as root).
func TestParentDeathStopsServer(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dataDir := testDataDir(t)

	helper := exec.Command(os.Args[0], "-test.run=^TestHelperStartAndHang$", "-test.v")
	helper.Env = append(os.Environ(), helperDataDirEnv+"="+dataDir)
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	helper.Stderr = os.Stderr
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
			pid, err = strconv.Atoi(p)
			require.NoError(t, err)
			break
		}
	}
	require.NotZero(t, pid, "helper did not report a postgres pid")
	require.False(t, processGone(pid))

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	began := time.Now()
	require.Eventually(t, func() bool { return processGone(pid) }, 30*time.Second, 20*time.Millisecond,
		"postgres outlived its killed parent")
	t.Logf("postgres exited %s after its parent was killed", time.Since(began).Round(time.Millisecond))

	// It was a clean shutdown: no pid file is left, and the cluster starts
	// again without needing the leftover handling.
	require.Eventually(t, func() bool {
		_, err := os.Stat(dataDir + "/pgdata/postmaster.pid")
		return os.IsNotExist(err)
	}, 10*time.Second, 20*time.Millisecond)
	startServer(t, Options{DataDir: dataDir, Ephemeral: true})
}
