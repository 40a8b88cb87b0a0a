package api

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

func TestSendWithin(t *testing.T) {
	t.Parallel()
	require.NoError(t, sendWithin(time.Minute, func() error { return nil }))
	boom := errors.New("boom")
	require.ErrorIs(t, sendWithin(time.Minute, func() error { return boom }), boom)

	// A send that never returns is given up on.
	blocked := make(chan struct{})
	defer close(blocked)
	require.ErrorIs(t, sendWithin(10*time.Millisecond, func() error { <-blocked; return nil }), errStalled)
}

func TestEventCursor(t *testing.T) {
	t.Parallel()
	run := uuid.NewString()
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC)
	c := EventCursor{Time: at, RunID: run, Seq: 42}
	got, err := ResumeAfter(c.String())
	require.NoError(t, err)
	require.Equal(t, run, got.RunID)
	require.Equal(t, int64(42), got.Seq)
	require.True(t, got.Time.Equal(at.Add(-ResumeOverlap)), "%v", got.Time)

	for _, bad := range []string{"", "42", "1.2.3", fmt.Sprintf("x.%s.1", run), fmt.Sprintf("1.%s.-1", run), "1.not-a-run.1"} {
		_, err := ResumeAfter(bad)
		require.ErrorIs(t, err, fault.ErrInvalidArgument, "%q", bad)
	}
}

// TestInTimeOrder: runs interleave by time; a run's events keep their
// sequence order even when a later one has an earlier time.
func TestInTimeOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ev := func(run string, seq int64, ms int) *wfv1.RunEvent {
		return &wfv1.RunEvent{RunId: run, Sequence: seq, Time: timestamppb.New(t0.Add(time.Duration(ms) * time.Millisecond))}
	}
	// Grouped by run, as the store returns them.
	in := []*wfv1.RunEvent{ev("a", 1, 10), ev("a", 2, 30), ev("a", 3, 25), ev("a", 4, 40), ev("b", 7, 20), ev("b", 8, 35)}
	var got []string
	for _, k := range inTimeOrder(in) {
		got = append(got, fmt.Sprintf("%s%d", k.ev.RunId, k.ev.Sequence))
	}
	require.Equal(t, []string{"a1", "b7", "a2", "a3", "b8", "a4"}, got)
}
