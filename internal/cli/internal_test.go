package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

func TestExitCodeFor(t *testing.T) {
	t.Parallel()
	for st, want := range map[wfv1.RunStatus]int{
		wfv1.RunStatus_RUN_STATUS_COMPLETED:         0,
		wfv1.RunStatus_RUN_STATUS_FAILED:            1,
		wfv1.RunStatus_RUN_STATUS_MAX_STEPS_REACHED: 2,
		wfv1.RunStatus_RUN_STATUS_ERROR:             3,
		wfv1.RunStatus_RUN_STATUS_CANCELLED:         4,
		wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL: 6,
		wfv1.RunStatus_RUN_STATUS_UNSPECIFIED:       5,
	} {
		require.Equal(t, want, exitCodeFor(st), st)
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:9090":        true,
		"127.1.2.3:1":           true,
		"localhost:9090":        true,
		"LOCALHOST":             true,
		"[::1]:9090":            true,
		"unix:///run/wf.sock":   true,
		"dns:///localhost:9090": true,
		"wayfinder.example.com": false,
		"10.0.0.1:9090":         false,
		"[2001:db8::1]:443":     false,
		"0.0.0.0:9090":          false,
	} {
		require.Equal(t, want, isLoopback(addr), addr)
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]wfv1.RunStatus{
		"completed":            wfv1.RunStatus_RUN_STATUS_COMPLETED,
		"AWAITING-APPROVAL":    wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL,
		"max_steps_reached":    wfv1.RunStatus_RUN_STATUS_MAX_STEPS_REACHED,
		"RUN_STATUS_CANCELLED": wfv1.RunStatus_RUN_STATUS_CANCELLED,
	} {
		got, ok := parseStatus(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "unspecified", "done"} {
		_, ok := parseStatus(in)
		require.False(t, ok, in)
	}
}

// The error line: code, message and the field violations the message does
// not already hold; the API key never.
func TestDescribe(t *testing.T) {
	t.Parallel()
	const key = "wf_secret-key-0123456789"
	st, err := status.New(codes.InvalidArgument, "params.max_steps: must be 1-500").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "params.max_steps", Description: "must be 1-500"},
			{Field: "params.labels", Description: "key \"A\" is not allowed"},
		},
	})
	require.NoError(t, err)
	var stderr bytes.Buffer
	s := &session{env: Env{Stderr: &stderr}, prefix: "wayfinder run", apiKey: key}
	require.Equal(t, 5, s.fail(t.Context(), st.Err()))
	require.Equal(t, "wayfinder run: InvalidArgument: params.max_steps: must be 1-500; params.labels: key \"A\" is not allowed\n", stderr.String())

	stderr.Reset()
	require.Equal(t, 5, s.fail(t.Context(), errors.New("header value "+key+"\nwas refused")))
	require.Equal(t, "wayfinder run: header value [redacted] was refused\n", stderr.String())
}

func TestFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0", formatCount(0))
	require.Equal(t, "999", formatCount(999))
	require.Equal(t, "1,000", formatCount(1000))
	require.Equal(t, "-1,234,567", formatCount(-1234567))
	require.Equal(t, "$0", formatCost(0))
	require.Equal(t, "$0.0012", formatCost(0.0012))
	require.Equal(t, "$1.50", formatCost(1.5))
	require.Equal(t, "850ms", formatDuration(850*time.Millisecond))
	require.Equal(t, "12.3s", formatDuration(12345*time.Millisecond))
	require.Equal(t, "4m05s", formatDuration(245*time.Second))
	require.Equal(t, "1h02m", formatDuration(62*time.Minute))
	require.Equal(t, "a b…", oneLine("a\n  b  c", 4))
	require.Equal(t, "1 step", plural(1, "step"))
	require.Equal(t, "2 steps", plural(2, "step"))

	args, err := structpb.NewStruct(map[string]any{"reasoning": "because", "target": map[string]any{"role": "button", "name": "Sign in"}})
	require.NoError(t, err)
	require.Equal(t, `browser_click "Sign in" → element_disabled`, actionText(&wfv1.Action{Tool: "browser_click", Arguments: args, Outcome: "element_disabled"}))
}

// The live line: redrawn in place, never wider than the terminal, gone
// once the run has ended.
func TestDisplayLiveLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	known := &wfv1.Run{Status: wfv1.RunStatus_RUN_STATUS_QUEUED, CreateTime: timestamppb.New(created), Params: &wfv1.RunParams{MaxSteps: 25}}
	d := newDisplay(&out, true, "50", "run-1", known)
	d.now = func() time.Time { return created.Add(90 * time.Second) }
	at := func(sec int) *timestamppb.Timestamp {
		return timestamppb.New(created.Add(time.Duration(sec) * time.Second))
	}

	d.event(&wfv1.RunEvent{Sequence: 1, Time: at(1), Type: wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED, Status: wfv1.RunStatus_RUN_STATUS_RUNNING, Payload: &wfv1.RunEvent_Step{Step: &wfv1.Step{Number: 3}}})
	require.Equal(t, "RUNNING · step 3/25 · 1m30s · 0 tok · $0", out.String())
	out.Reset()
	d.event(&wfv1.RunEvent{Sequence: 2, Time: at(2), Type: wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED, Status: wfv1.RunStatus_RUN_STATUS_RUNNING, Payload: &wfv1.RunEvent_Step{Step: &wfv1.Step{
		Number: 3, Url: "http://x/", Actions: []*wfv1.Action{{Tool: "browser_navigate", Outcome: "ok"}},
		Usage: &wfv1.Usage{InputTokens: 1200, OutputTokens: 34, CostUsd: 0.02},
	}}})
	lines := strings.Split(out.String(), "\n")
	require.Equal(t, "\r\x1b[K[   2.0s] step 3: browser_navigate @ http://x/", lines[0])
	require.Equal(t, "RUNNING · step 3/25 · 1m30s · 1,234 tok · $0.02 …", lines[1]) // cut to the width
	out.Reset()
	d.event(&wfv1.RunEvent{Sequence: 3, Time: at(3), Type: wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.Equal(t, "\r\x1b[K", out.String())
}

// TestListAllStops: paging ends at the limit, at the last page, and when a
// server hands back the same token or an empty page (it would page forever).
func TestListAllStops(t *testing.T) {
	s := &session{}
	cases := []struct {
		name  string
		limit int
		page  func(token string) ([]int, string)
		want  int
		calls int
	}{
		{"last page", 10, func(token string) ([]int, string) {
			if token == "" {
				return []int{1, 2}, "p2"
			}
			return []int{3}, ""
		}, 3, 2},
		{"limit", 3, func(string) ([]int, string) { return []int{1, 2}, "more" }, 3, 2},
		{"same token", 100, func(string) ([]int, string) { return []int{1}, "again" }, 2, 2},
		{"empty page", 100, func(string) ([]int, string) { return nil, "next" }, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			got, err := listAll(t.Context(), s, c.limit, func(_ context.Context, token string) ([]int, string, error) {
				calls++
				items, next := c.page(token)
				return items, next, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.want || calls != c.calls {
				t.Fatalf("got %d items in %d calls, want %d in %d", len(got), calls, c.want, c.calls)
			}
		})
	}
}
