package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scriptedDriver is a driver whose answers the test decides.
type scriptedDriver struct {
	snapshotText string
	snapshotErr  error
	openErr      error
	clickErr     error
	// failAt makes the step of this number (1-based, counting warm-up
	// steps) fail in its screenshot.
	failAt int

	steps, clicks int
	clicked       []Target
}

func (d *scriptedDriver) open(context.Context, string) error { return d.openErr }

func (d *scriptedDriver) snapshot(context.Context) (string, error) {
	d.steps++
	return d.snapshotText, d.snapshotErr
}

func (d *scriptedDriver) screenshot(context.Context) ([]byte, error) {
	if d.steps == d.failAt {
		return nil, errors.New("renderer crashed")
	}
	return []byte("\x89PNG-1234"), nil
}

func (d *scriptedDriver) click(_ context.Context, t Target) error {
	d.clicks++
	d.clicked = append(d.clicked, t)
	return d.clickErr
}

func TestRunPage(t *testing.T) {
	t.Parallel()
	tok, err := NewTokenizer("")
	require.NoError(t, err)
	page := Page{Name: "p", Click: Target{Role: "button", Name: "Go"}}
	const snap = `- button "Go" [ref=e1]`

	tests := []struct {
		name         string
		ours, theirs *scriptedDriver
		check        func(t *testing.T, r PageResult, ours, theirs *scriptedDriver)
	}{
		{
			name:   "both measured, warm-up steps not recorded",
			ours:   &scriptedDriver{snapshotText: "héllo"},
			theirs: &scriptedDriver{snapshotText: snap},
			check: func(t *testing.T, r PageResult, ours, theirs *scriptedDriver) {
				require.Equal(t, 5, ours.steps)
				require.Equal(t, 5, theirs.clicks)
				require.Equal(t, page.Click, theirs.clicked[0])
				for _, s := range []SideResult{r.Ours, r.Theirs} {
					require.Empty(t, s.Err)
					require.Empty(t, s.Pending)
					for _, sum := range []Summary{s.Snapshot, s.Screenshot, s.Action, s.Step, s.SnapshotChars, s.SnapshotTokens, s.ScreenshotBytes} {
						require.Equal(t, 3, sum.N)
					}
					require.InDelta(t, 9.0, s.ScreenshotBytes.Median, 0)
				}
				require.InDelta(t, 5.0, r.Ours.SnapshotChars.Median, 0, "characters, not bytes")
				require.InDelta(t, float64(tok.Count(snap)), r.Theirs.SnapshotTokens.Median, 0)
				require.GreaterOrEqual(t, r.Ours.Step.Median, r.Ours.Snapshot.Min)
			},
		},
		{
			name:   "a pending snapshot leaves the screenshot measured and the click pending",
			ours:   &scriptedDriver{snapshotErr: pendingf("no Snapshot yet")},
			theirs: &scriptedDriver{snapshotText: snap},
			check: func(t *testing.T, r PageResult, ours, theirs *scriptedDriver) {
				require.Empty(t, r.Ours.Err)
				require.Equal(t, []string{"snapshot", "action"}, r.Ours.Pending)
				require.Equal(t, 3, r.Ours.Screenshot.N)
				require.Zero(t, r.Ours.Snapshot.N)
				require.Zero(t, r.Ours.Step.N, "a step with a pending part is not a step")
				require.Zero(t, ours.clicks)
				require.Equal(t, 3, r.Theirs.Step.N)
			},
		},
		{
			name:   "a failure ends that side only",
			ours:   &scriptedDriver{snapshotText: snap, failAt: 4},
			theirs: &scriptedDriver{snapshotText: snap},
			check: func(t *testing.T, r PageResult, ours, theirs *scriptedDriver) {
				require.Equal(t, "iteration 4: screenshot: renderer crashed", r.Ours.Err)
				require.Equal(t, 4, ours.steps)
				// Step 3 was measured whole; step 4 got as far as its snapshot.
				require.Equal(t, 2, r.Ours.Snapshot.N)
				require.Equal(t, 1, r.Ours.Step.N)
				require.Empty(t, r.Theirs.Err)
				require.Equal(t, 3, r.Theirs.Step.N)
			},
		},
		{
			name:   "a target missing from the snapshot is a failure",
			ours:   &scriptedDriver{snapshotText: snap, clickErr: fmt.Errorf("%w: button %q", errNoTarget, "Go")},
			theirs: &scriptedDriver{snapshotText: snap},
			check: func(t *testing.T, r PageResult, ours, theirs *scriptedDriver) {
				require.Equal(t, `iteration 1: click button "Go": click target not in snapshot: button "Go"`, r.Ours.Err)
				require.Zero(t, r.Ours.Snapshot.N)
			},
		},
		{
			name:   "a page that does not open",
			ours:   &scriptedDriver{snapshotText: snap},
			theirs: &scriptedDriver{openErr: errors.New("net::ERR_CONNECTION_REFUSED")},
			check: func(t *testing.T, r PageResult, ours, theirs *scriptedDriver) {
				require.True(t, strings.HasPrefix(r.Theirs.Err, "open http://x/p: "))
				require.Zero(t, theirs.steps)
				require.Equal(t, 3, r.Ours.Step.N)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runPage(context.Background(), page, "http://x/p", tt.ours, tt.theirs, tok, 2, 3)
			require.Equal(t, page, r.Page)
			tt.check(t, r, tt.ours, tt.theirs)
		})
	}
}

func TestRunPageStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	tok, err := NewTokenizer("")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ours, theirs := &scriptedDriver{}, &scriptedDriver{}
	r := runPage(ctx, Page{Name: "p"}, "http://x/p", ours, theirs, tok, 1, 5)
	require.Zero(t, ours.steps+theirs.steps)
	require.Equal(t, context.Canceled.Error(), r.Ours.Err)
	require.Equal(t, context.Canceled.Error(), r.Theirs.Err)
}
