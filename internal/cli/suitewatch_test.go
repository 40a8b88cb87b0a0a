package cli

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// fakeTests is a TestService whose calls the test scripts.
type fakeTests struct {
	wfv1.UnimplementedTestServiceServer
	start   func(ctx context.Context, req *wfv1.StartSuiteRunRequest) (*wfv1.SuiteRun, error)
	watch   func(n int, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error
	watches atomic.Int32
	cancels atomic.Int32
}

func (f *fakeTests) StartSuiteRun(ctx context.Context, req *wfv1.StartSuiteRunRequest) (*wfv1.SuiteRun, error) {
	return f.start(ctx, req)
}

func (f *fakeTests) CancelSuiteRun(_ context.Context, req *wfv1.CancelSuiteRunRequest) (*wfv1.SuiteRun, error) {
	f.cancels.Add(1)
	return &wfv1.SuiteRun{Id: req.GetId(), Suite: "s", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, CancelRequested: true}, nil
}

func (f *fakeTests) WatchSuiteRun(_ *wfv1.WatchSuiteRunRequest, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error {
	return f.watch(int(f.watches.Add(1)), stream)
}

// serveFake serves f on a loopback port until the test ends and returns
// a session connected to it.
func serveFake(t *testing.T, f *fakeTests) (*session, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	wfv1.RegisterTestServiceServer(srv, f)
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(lis) })
	t.Cleanup(func() { srv.Stop(); wg.Wait() })
	s := &session{env: Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, addr: lis.Addr().String(), insecure: true}
	t.Cleanup(s.close)
	return s, lis.Addr().String()
}

func runningSuiteRun() *wfv1.SuiteRun {
	return &wfv1.SuiteRun{Id: "sr-1", Suite: "s", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING,
		Results: []*wfv1.TestResult{{Test: "t", Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING}}}
}

// A stream that drops each time right after the current state (which it
// always starts with) makes no progress: the watch gives up after
// reconnectFor instead of reconnecting forever.
func TestWatchSuiteGivesUpWithoutChange(t *testing.T) {
	t.Parallel()
	const enough = 12 // far more reconnects than reconnectFor allows
	f := &fakeTests{watch: func(n int, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error {
		if n > enough {
			return status.Error(codes.FailedPrecondition, "reconnected too often")
		}
		if err := stream.Send(runningSuiteRun()); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "dropped")
	}}
	s, _ := serveFake(t, f)
	s.reconnectFor = 300 * time.Millisecond
	tc, err := s.testClient()
	require.NoError(t, err)
	var notices []string
	_, err = s.watchSuite(t.Context(), tc, runningSuiteRun(), func(*wfv1.SuiteRun) {}, func(m string) { notices = append(notices, m) })
	require.ErrorContains(t, err, "lost the stream of suite run sr-1")
	require.Less(t, int(f.watches.Load()), enough)
	require.NotEmpty(t, notices)
}

// A stream that drops after each change is followed to the end.
func TestWatchSuiteFollowsChanges(t *testing.T) {
	t.Parallel()
	f := &fakeTests{watch: func(n int, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error {
		sr := runningSuiteRun()
		sr.Results[0].Attempts = make([]*wfv1.TestAttempt, n) // a change per stream
		for i := range sr.Results[0].Attempts {
			sr.Results[0].Attempts[i] = &wfv1.TestAttempt{Number: int32(i + 1)}
		}
		if n == 5 {
			sr.Status, sr.Results[0].Outcome = wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, wfv1.TestOutcome_TEST_OUTCOME_FLAKY
		}
		if err := stream.Send(sr); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "dropped")
	}}
	s, _ := serveFake(t, f)
	// Without progress the watch would give up at the fourth stream
	// (after 0.2 s + 0.4 s + 0.8 s of backoff); each change resets that.
	s.reconnectFor = time.Second
	tc, err := s.testClient()
	require.NoError(t, err)
	final, err := s.watchSuite(t.Context(), tc, runningSuiteRun(), func(*wfv1.SuiteRun) {}, func(string) {})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, final.GetStatus())
}

// Ctrl-C while StartSuiteRun is under way: the server started the suite
// run, so the command waits for its answer and cancels it (exit 4)
// instead of leaving it running unseen (exit 130).
func TestTestRunInterruptedWhileStarting(t *testing.T) {
	t.Parallel()
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	f := &fakeTests{
		start: func(ctx context.Context, _ *wfv1.StartSuiteRunRequest) (*wfv1.SuiteRun, error) {
			interrupt()
			select { // the suite run is created; the answer is on its way
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			return runningSuiteRun(), nil
		},
		watch: func(_ int, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error {
			if err := stream.Send(runningSuiteRun()); err != nil {
				return err
			}
			<-stream.Context().Done()
			return stream.Context().Err()
		},
	}
	_, addr := serveFake(t, f)
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"test", "run", "--suite", "s", "--addr", addr}, Env{Stdout: &stdout, Stderr: &stderr})
	require.Equal(t, exitCancelled, code, stderr.String())
	require.Equal(t, int32(1), f.cancels.Load(), "the started suite run is cancelled")
	require.Contains(t, stderr.String(), "interrupted: cancelling suite run sr-1")
	require.Contains(t, stderr.String(), "\nCANCELLED")
}
