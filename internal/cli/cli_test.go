package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

const helloGoal = "Expect text Hello from the test site"

// TestCommands runs the client commands against one server.
func TestCommands(t *testing.T) {
	addr := startServer(t, "")
	c := newClient(addr)
	s := newSite(t)

	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		testResume(t, addr)
	})
	t.Run("Approval", func(t *testing.T) {
		t.Parallel()
		testApproval(t, addr)
	})

	t.Run("RunFollowExitCodes", func(t *testing.T) {
		tests := []struct {
			name   string
			args   []string
			code   int
			status string
			want   string // in stdout
		}{
			{"completed", []string{"--goal", helloGoal, "--allow", "127.0.0.1"}, 0, "COMPLETED", "screenshot:"},
			{"failed", []string{"--goal", "Expect text Goodbye from nowhere", "--allow", "127.0.0.1"}, 1, "FAILED", ""},
			{"max steps", []string{"--goal", "1. Click Go\n2. Click Go\n3. Expect text Hello", "--max-steps", "1", "--allow", "127.0.0.1"}, 2, "MAX_STEPS_REACHED", ""},
			// A loopback start URL that the run does not allow: the
			// domain policy refuses it before the browser sends anything.
			{"error", []string{"--goal", helloGoal}, 3, "ERROR", "DOMAIN_BLOCKED"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				args := append([]string{"run", "--url", s.URL, "--follow", "--label", "test=exit-codes"}, tt.args...)
				r := c.run(t, args...)
				require.Equal(t, tt.code, r.code, r)
				require.Empty(t, r.stderr, r)
				require.Contains(t, r.stdout, "\n"+tt.status+" in ", r)
				require.Contains(t, r.stdout, tt.want, r)
				require.Contains(t, r.stdout, "queued", r)

				// The same run as JSON lines: every one a RunEvent, in
				// order, ending with the final run.
				args = append(args, "--json")
				r = c.run(t, args...)
				require.Equal(t, tt.code, r.code, r)
				evs := parseEvents(t, r.stdout)
				requireSequential(t, evs)
				require.Equal(t, "RUN_STATUS_"+tt.status, evs[len(evs)-1].GetRun().GetStatus().String())
			})
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		t.Parallel()
		s := newSite(t)
		s.stalls.Store(1)
		bg := c.start(t, "run", "--goal", helloGoal, "--url", s.URL+"/stall", "--allow", "127.0.0.1", "--follow", "--json")
		var seen []*wfv1.RunEvent
		started := bg.nextEvent(t, &seen, func(ev *wfv1.RunEvent) bool {
			return ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_STARTED
		})
		r := c.run(t, "runs", "cancel", started.GetRunId(), "--reason", "changed my mind")
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "cancel requested", r)
		code, rest := bg.wait(t)
		require.Equal(t, 4, code, "stderr: %s", bg.stderr.String())
		evs := append(seen, parseEvents(t, strings.Join(rest, "\n"))...)
		requireSequential(t, evs)
		final := evs[len(evs)-1].GetRun()
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, final.GetStatus())
		require.Equal(t, "changed my mind", final.GetError().GetMessage())
	})

	t.Run("TimeoutWhileFollowing", func(t *testing.T) {
		t.Parallel()
		s := newSite(t)
		s.stalls.Store(1)
		r := c.run(t, "run", "--goal", helloGoal, "--url", s.URL+"/stall", "--allow", "127.0.0.1", "--follow", "--timeout", "3s")
		require.Equal(t, 7, r.code, r)
		require.Contains(t, r.stderr, "--timeout 3s passed", r)
		id := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "run ")
		s.unstall()
		// The run went on and can be watched to its end.
		r = c.run(t, "runs", "events", id, "--follow")
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "FINISHED", r)
	})

	t.Run("Interrupted", func(t *testing.T) {
		t.Parallel()
		s := newSite(t)
		s.stalls.Store(1)
		bg := c.start(t, "run", "--goal", helloGoal, "--url", s.URL+"/stall", "--allow", "127.0.0.1", "--follow", "--json")
		var seen []*wfv1.RunEvent
		started := bg.nextEvent(t, &seen, func(ev *wfv1.RunEvent) bool {
			return ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_STARTED
		})
		bg.cancel() // Ctrl-C
		code, _ := bg.wait(t)
		require.Equal(t, 130, code)
		require.Contains(t, bg.stderr.String(), "runs cancel "+started.GetRunId())
		// Interrupting the client leaves the run alone.
		r := c.run(t, "runs", "get", started.GetRunId(), "--json")
		require.Equal(t, 0, r.code, r)
		run := &wfv1.Run{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), run))
		require.False(t, run.GetCancelRequested())
		s.unstall()
	})

	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			args []string
			want string // in stderr
		}{
			{"server field violation", []string{"run", "--goal", helloGoal, "--url", s.URL, "--max-steps", "1000"}, "InvalidArgument"},
			{"server field violation names the field", []string{"run", "--goal", helloGoal, "--url", s.URL, "--max-steps", "1000"}, "params.max_steps"},
			{"missing goal", []string{"run", "--url", s.URL}, "params.goal"},
			{"steps goal that does not parse", []string{"run", "--goal", "Frobnicate the widget", "--url", s.URL, "--provider", "steps"}, "params.goal"},
			{"unknown flag", []string{"run", "--gaol", "x"}, "flag provided but not defined: -gaol"},
			{"bad label", []string{"run", "--goal", "x", "--url", s.URL, "--label", "novalue"}, "not key=value"},
			{"bad status", []string{"runs", "list", "--status", "sleeping"}, "unknown status"},
			{"bad params file", []string{"run", "--params", filepath.Join(t.TempDir(), "missing.json")}, "--params"},
			{"missing run ID", []string{"runs", "get"}, "missing RUN_ID"},
			{"unknown run", []string{"runs", "get", "00000000-0000-0000-0000-000000000000"}, "NotFound"},
			{"unknown subcommand", []string{"runs", "frob"}, "unknown subcommand"},
			{"media without -o", []string{"media", "get", "abc"}, "-o FILE is required"},
			{"unreachable server", []string{"runs", "list", "--addr", "127.0.0.1:1"}, "cannot reach the server at 127.0.0.1:1"},
			{"TLS to a plaintext server", []string{"runs", "list", "--tls"}, "cannot reach the server"},
			{"TLS and plaintext", []string{"runs", "list", "--tls", "--insecure"}, "exclude each other"},
			{"approve an unknown run", []string{"approve", "00000000-0000-0000-0000-000000000000"}, "NotFound"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := c.run(t, tt.args...)
				require.Equal(t, 5, r.code, r)
				require.Contains(t, r.stderr, tt.want, r)
				require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
				require.NotContains(t, r.stderr, "goroutine", r)
				require.Empty(t, r.stdout, r)
			})
		}
	})

	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		r := c.run(t, "run", "-h")
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stderr, "--follow")
		require.Contains(t, r.stderr, "WAYFINDER_API_KEY")
	})

	t.Run("RunsAndMedia", func(t *testing.T) {
		t.Parallel()
		// Without --follow: the run's ID, exit 0 at once.
		r := c.run(t, "run", "--goal", helloGoal, "--url", s.URL, "--allow", "127.0.0.1", "--label", "suite=runs", "--request-id", "runs-and-media-1")
		require.Equal(t, 0, r.code, r)
		id := strings.TrimSpace(r.stdout)
		require.Len(t, id, 36, r)

		// The same request ID is the same run.
		r = c.run(t, "run", "--goal", helloGoal, "--url", s.URL, "--allow", "127.0.0.1", "--label", "suite=runs", "--request-id", "runs-and-media-1", "--json")
		require.Equal(t, 0, r.code, r)
		run := &wfv1.Run{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), run), r)
		require.Equal(t, id, run.GetId())

		// Watching it as an event log exits by its final status.
		r = c.run(t, "runs", "events", id, "--follow")
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "STEP_FINISHED", r)
		require.Contains(t, r.stdout, "FINISHED", r)

		r = c.run(t, "runs", "get", id, "--json")
		require.Equal(t, 0, r.code, r)
		run = &wfv1.Run{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), run), r)
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, run.GetStatus())

		r = c.run(t, "runs", "get", id)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "COMPLETED", r)
		require.Contains(t, r.stdout, "suite=runs", r)
		require.Contains(t, r.stdout, run.GetFinalScreenshotMediaId(), r)

		// The event log without --follow: every event so far, then exit.
		r = c.run(t, "runs", "events", id, "--json")
		require.Equal(t, 0, r.code, r)
		evs := parseEvents(t, r.stdout)
		requireSequential(t, evs)
		require.Len(t, evs, int(run.GetLastEventSequence()))
		r = c.run(t, "runs", "events", id, "--json", "--after", "2")
		require.Equal(t, 0, r.code, r)
		after := parseEvents(t, r.stdout)
		require.Len(t, after, len(evs)-2)
		require.Equal(t, int64(3), after[0].GetSequence())

		r = c.run(t, "runs", "steps", id)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "step 1", r)
		r = c.run(t, "runs", "steps", id, "--json")
		require.Equal(t, 0, r.code, r)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, int(run.GetStepCount()))
		step := &wfv1.Step{}
		require.NoError(t, protojson.Unmarshal([]byte(lines[0]), step))
		require.Equal(t, int32(1), step.GetNumber())

		// Listing: filtered by label and status.
		r = c.run(t, "runs", "list", "--label", "suite=runs", "--status", "completed")
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, id, r)
		require.Contains(t, r.stdout, "STATUS", r)
		r = c.run(t, "runs", "list", "--label", "suite=runs", "--status", "failed", "--json")
		require.Equal(t, 0, r.code, r)
		require.Empty(t, r.stdout, r)
		r = c.run(t, "runs", "list", "--json", "--limit", "1")
		require.Equal(t, 0, r.code, r)
		require.Equal(t, 1, strings.Count(r.stdout, "\n"), r)

		// Cancelling a finished run changes nothing.
		r = c.run(t, "runs", "cancel", id)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "already ended: COMPLETED", r)

		// The final screenshot, to a file and to stdout.
		media := run.GetFinalScreenshotMediaId()
		require.NotEmpty(t, media)
		file := filepath.Join(t.TempDir(), "final.png")
		r = c.run(t, "media", "get", media, "-o", file)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "image/png", r)
		png, err := os.ReadFile(file)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "not a PNG: % x", png[:min(8, len(png))])
		r = c.run(t, "media", "get", "-o", "-", media)
		require.Equal(t, 0, r.code, r)
		require.Equal(t, png, []byte(r.stdout))
	})

	t.Run("ParamsFile", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "params.json")
		// The file's goal would fail; the flag overrides it.
		require.NoError(t, os.WriteFile(file, []byte(`{"goal": "Expect text Not there", "start_url": "`+s.URL+`", "allowed_domains": ["127.0.0.1"], "labels": {"from": "file"}}`), 0o600))
		r := c.run(t, "run", "--params", file, "--goal", helloGoal, "--label", "suite=params", "--json", "--follow")
		require.Equal(t, 0, r.code, r)
		evs := parseEvents(t, r.stdout)
		final := evs[len(evs)-1].GetRun()
		require.Equal(t, helloGoal, final.GetParams().GetGoal())
		require.Equal(t, map[string]string{"from": "file", "suite": "params"}, final.GetParams().GetLabels())
	})

	t.Run("LiveDisplay", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		c := *c
		c.env = map[string]string{"WAYFINDER_ADDR": c.addr, "COLUMNS": "100"}
		code := c.main(context.Background(), []string{"run", "--goal", helloGoal, "--url", s.URL, "--allow", "127.0.0.1", "--follow"}, &stdout, &stderr, true)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
		out := stdout.String()
		require.Contains(t, out, "step 1/25", out)       // the live line
		require.Contains(t, out, "\r\x1b[K", out)        // redrawn in place
		require.Contains(t, out, "] step 1: ", out)      // the finished step, kept
		require.Contains(t, out, "\nCOMPLETED in ", out) // the summary
		for line := range strings.Lines(out) {
			for part := range strings.SplitSeq(line, "\r\x1b[K") {
				require.LessOrEqual(t, len([]rune(strings.TrimSuffix(part, "\n"))), 400, "line: %q", part)
			}
		}
	})
}

// testResume cuts the connection under a followed run: the command
// resumes from the last event it saw and prints every event exactly once.
func testResume(t *testing.T, addr string) {
	p := newProxy(t, addr)
	c := newClient(p.addr())
	s := newSite(t)
	s.stalls.Store(1)
	bg := c.start(t, "run", "--goal", "1. Expect text Hello\n2. Open /stall\n3. Expect text finally", "--url", s.URL,
		"--allow", "127.0.0.1", "--follow", "--json")
	var seen []*wfv1.RunEvent
	// The run is held on its way to /stall.
	bg.nextEvent(t, &seen, func(ev *wfv1.RunEvent) bool {
		return ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED && ev.GetTool().GetTool() == "browser_navigate"
	})
	p.cut()
	s.unstall()
	code, rest := bg.wait(t)
	require.Equal(t, 0, code, "stderr: %s", bg.stderr.String())
	require.Contains(t, bg.stderr.String(), "resuming after event")
	require.GreaterOrEqual(t, p.accepted.Load(), int64(2))
	requireSequential(t, append(seen, parseEvents(t, strings.Join(rest, "\n"))...))
}

// TestAPIKeys runs commands against a server that requires API keys.
func TestAPIKeys(t *testing.T) {
	const adminKey = "wf_cli-test-admin-key-0123456789abcdefghijklmnop"
	c := newClient(startServer(t, adminKey))

	r := c.run(t, "runs", "list")
	require.Equal(t, 5, r.code, r)
	require.Contains(t, r.stderr, "Unauthenticated", r)
	require.Contains(t, r.stderr, "set WAYFINDER_API_KEY", r)

	const wrong = "wf_wrong-key-that-must-never-be-printed-0123456789"
	r = c.run(t, "runs", "list", "--api-key", wrong)
	require.Equal(t, 5, r.code, r)
	require.Contains(t, r.stderr, "Unauthenticated", r)
	require.NotContains(t, r.stderr+r.stdout, wrong, r)

	c.env["WAYFINDER_API_KEY"] = adminKey
	r = c.run(t, "runs", "list")
	require.Equal(t, 0, r.code, r)
	require.NotContains(t, r.stderr+r.stdout, adminKey, r)
	r = c.run(t, "runs", "get", "00000000-0000-0000-0000-000000000000")
	require.Equal(t, 5, r.code, r)
	require.Contains(t, r.stderr, "NotFound", r)
	require.NotContains(t, r.stderr+r.stdout, adminKey, r)
}
