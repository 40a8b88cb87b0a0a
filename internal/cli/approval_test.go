package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// testApproval stops at a checkpoint (exit 6), answers it with approve and
// watches the run to its end.
func testApproval(t *testing.T, addr string) {
	c := newClient(addr)
	s := newSite(t)
	params := filepath.Join(t.TempDir(), "params.json")
	require.NoError(t, os.WriteFile(params, []byte(`{"allowed_domains": ["127.0.0.1"],
		"checkpoints": [{"name": "the test site", "url_pattern": "^http://127\\.0\\.0\\.1:"}]}`), 0o600))

	for _, tt := range []struct {
		name  string
		args  []string
		verb  string
		final wfv1.RunStatus
		code  int
	}{
		{"approve", nil, "approved", wfv1.RunStatus_RUN_STATUS_COMPLETED, 0},
		// The steps controller gives up when a human says no.
		{"reject", []string{"--reject", "--message", "not this page"}, "rejected", wfv1.RunStatus_RUN_STATUS_FAILED, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := c.run(t, "run", "--params", params, "--goal", helloGoal, "--url", s.URL, "--follow", "--exit-on-approval")
			require.Equal(t, 6, r.code, r)
			require.Contains(t, r.stdout, "approval needed: ", r)
			require.Contains(t, r.stdout, "the test site", r)
			require.Contains(t, r.stdout, "\nAWAITING_APPROVAL\n", r)
			id := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "run ")
			require.Contains(t, r.stdout, "answer with: wayfinder approve "+id, r)

			r = c.run(t, "runs", "get", id, "--json")
			require.Equal(t, 0, r.code, r)
			run := &wfv1.Run{}
			require.NoError(t, protojson.Unmarshal([]byte(r.stdout), run), r)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, run.GetStatus())
			approvalID := run.GetPendingApproval().GetId()
			require.NotEmpty(t, approvalID)
			r = c.run(t, "runs", "get", id)
			require.Contains(t, r.stdout, "the test site", r)

			// Following it again stops at once: it still waits.
			r = c.run(t, "runs", "events", id, "--follow", "--exit-on-approval")
			require.Equal(t, 6, r.code, r)

			r = c.run(t, append([]string{"approve", id, "--approval-id", approvalID}, tt.args...)...)
			require.Equal(t, 0, r.code, r)
			require.Contains(t, r.stdout, tt.verb, r)

			// Answered: the same request cannot be answered twice.
			r = c.run(t, "approve", id, "--approval-id", approvalID)
			require.Equal(t, 5, r.code, r)
			require.Contains(t, r.stderr, "FailedPrecondition", r)

			r = c.run(t, "runs", "events", id, "--follow", "--json")
			evs := parseEvents(t, r.stdout)
			requireSequential(t, evs)
			final := evs[len(evs)-1].GetRun()
			require.Equal(t, tt.final, final.GetStatus())
			require.Equal(t, tt.code, r.code, r)

			// Replayed later, the answered pause is history.
			r = c.run(t, "runs", "events", id, "--follow", "--exit-on-approval")
			require.Equal(t, tt.code, r.code, r)

			var answered *wfv1.RunEvent
			for _, ev := range evs {
				if ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED {
					answered = ev
				}
			}
			require.NotNil(t, answered)
			require.Equal(t, tt.verb == "approved", answered.GetApproval().GetApproved())
			if tt.verb == "rejected" {
				require.Equal(t, "not this page", answered.GetApproval().GetMessage())
			}
		})
	}

	// Without --exit-on-approval a followed run is followed through its
	// pause: answered from elsewhere, it goes on to its end.
	t.Run("answered while following", func(t *testing.T) {
		bg := c.start(t, "run", "--params", params, "--goal", helloGoal, "--url", s.URL, "--follow", "--json")
		var seen []*wfv1.RunEvent
		asked := bg.nextEvent(t, &seen, func(ev *wfv1.RunEvent) bool {
			return ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED
		})
		r := c.run(t, "approve", asked.GetRunId(), "--json")
		require.Equal(t, 0, r.code, r)
		run := &wfv1.Run{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), run), r)
		require.Equal(t, asked.GetRunId(), run.GetId())

		code, rest := bg.wait(t)
		require.Equal(t, 0, code, "stderr: %s", bg.stderr.String())
		evs := append(seen, parseEvents(t, strings.Join(rest, "\n"))...)
		requireSequential(t, evs)
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, evs[len(evs)-1].GetRun().GetStatus())
	})
}
