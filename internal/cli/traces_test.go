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

// parseTraces parses JSON lines of Traces.
func parseTraces(t *testing.T, out string) []*wfv1.Trace {
	t.Helper()
	var ts []*wfv1.Trace
	for line := range strings.Lines(out) {
		tr := &wfv1.Trace{}
		require.NoError(t, protojson.Unmarshal([]byte(line), tr), "line: %s", line)
		ts = append(ts, tr)
	}
	return ts
}

func traceIDs(ts []*wfv1.Trace) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.GetId()
	}
	return out
}

// TestTracesCommands: the traces of two completed runs of one task listed,
// read, pinned, exported and deleted with `wayfinder traces`.
func TestTracesCommands(t *testing.T) {
	t.Parallel()
	c := newClient(startServer(t, ""))
	s := newSite(t)
	const goal = "Click Go\nExpect text Hello from the test site"
	var ids []string
	for range 2 {
		r := c.run(t, "run", "--goal", goal, "--url", s.URL, "--allow", "127.0.0.1")
		require.Equal(t, 0, r.code, r)
		id := strings.TrimSpace(r.stdout)
		r = c.run(t, "runs", "events", id, "--follow")
		require.Equal(t, 0, r.code, "the run completes: %s", r)
		ids = append(ids, id)
	}

	// list: newest first, as a table and as JSON lines.
	r := c.run(t, "traces", "list")
	require.Equal(t, 0, r.code, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3, r)
	require.Regexp(t, `^ID\s+TASK\s+VERSION\s+PINNED\s+ACTIONS\s+CREATED\s+GOAL$`, lines[0])
	require.True(t, strings.HasPrefix(lines[1], ids[1]), r)
	require.Contains(t, lines[1], "Click Go Expect text Hello", "the goal on one line")
	r = c.run(t, "traces", "list", "--json")
	require.Equal(t, 0, r.code, r)
	listed := parseTraces(t, r.stdout)
	require.Equal(t, []string{ids[1], ids[0]}, traceIDs(listed))
	key := listed[0].GetTaskKey()
	require.Equal(t, key, listed[1].GetTaskKey())
	require.EqualValues(t, 1, listed[0].GetActionCount())
	require.Empty(t, listed[0].GetActions())
	r = c.run(t, "traces", "list", "--json", "--limit", "1")
	require.Equal(t, 0, r.code, r)
	require.Equal(t, []string{ids[1]}, traceIDs(parseTraces(t, r.stdout)))
	r = c.run(t, "traces", "list", "--json", "--task", key)
	require.Equal(t, 0, r.code, r)
	require.Len(t, parseTraces(t, r.stdout), 2)
	r = c.run(t, "traces", "list", "--json", "--task", strings.Repeat("0", 64))
	require.Equal(t, 0, r.code, r)
	require.Empty(t, r.stdout)

	// get: the actions, for people and as JSON.
	r = c.run(t, "traces", "get", ids[0])
	require.Equal(t, 0, r.code, r)
	require.Contains(t, r.stdout, "trace:       "+ids[0], r)
	require.Contains(t, r.stdout, "task:        "+key, r)
	require.Contains(t, r.stdout, "version:     1\n", r)
	require.Regexp(t, `\n\s+1\s+browser_click button "Go"  on `+s.URL+`/\n`, r.stdout)
	r = c.run(t, "traces", "get", ids[0], "--json")
	require.Equal(t, 0, r.code, r)
	got := parseTraces(t, r.stdout)[0]
	require.Len(t, got.GetActions(), 1)
	require.Equal(t, "Go", got.GetActions()[0].GetTarget().AsMap()["name"])

	// pin and unpin: one pinned trace per task.
	pinned := func() []string {
		t.Helper()
		r := c.run(t, "traces", "list", "--pinned", "--json")
		require.Equal(t, 0, r.code, r)
		return traceIDs(parseTraces(t, r.stdout))
	}
	require.Empty(t, pinned())
	r = c.run(t, "traces", "pin", ids[0])
	require.Equal(t, 0, r.code, r)
	require.Equal(t, "trace "+ids[0]+" pinned: replays of task "+key+" follow it (version 1)\n", r.stdout)
	require.Equal(t, []string{ids[0]}, pinned())
	r = c.run(t, "traces", "pin", ids[1], "--json")
	require.Equal(t, 0, r.code, r)
	require.True(t, parseTraces(t, r.stdout)[0].GetPinned())
	require.Equal(t, []string{ids[1]}, pinned())
	r = c.run(t, "traces", "unpin", ids[1])
	require.Equal(t, 0, r.code, r)
	require.Contains(t, r.stdout, "unpinned", r)
	require.Empty(t, pinned())

	// export: to stdout or a file.
	r = c.run(t, "traces", "export", ids[0], "--format", "steps")
	require.Equal(t, 0, r.code, r)
	require.Contains(t, r.stdout, "\nClick the \"Go\" button\nExpect URL \""+s.URL+"/\"\n", r)
	file := filepath.Join(t.TempDir(), "replay_test.go")
	r = c.run(t, "traces", "export", ids[0], "--format", "go", "-o", file)
	require.Equal(t, 0, r.code, r)
	require.Equal(t, "wrote "+file+" (trace "+ids[0]+", go)\n", r.stdout)
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(src), "package replay_test")
	require.Contains(t, string(src), `click(t, page, 1, target{role: "button", name: "Go"`)
	r = c.run(t, "traces", "export", ids[0], "--format", "go", "--json")
	require.Equal(t, 0, r.code, r)
	exp := &wfv1.ExportTraceResponse{}
	require.NoError(t, protojson.Unmarshal([]byte(r.stdout), exp))
	require.Equal(t, string(src), exp.GetContent())

	// delete: the trace goes, the run stays.
	r = c.run(t, "traces", "delete", ids[0])
	require.Equal(t, 0, r.code, r)
	require.Equal(t, "trace "+ids[0]+" deleted (its run stays)\n", r.stdout)
	r = c.run(t, "traces", "get", ids[0])
	require.Equal(t, 5, r.code, r)
	require.Contains(t, r.stderr, "wayfinder traces get: NotFound:", r)
	r = c.run(t, "runs", "get", ids[0])
	require.Equal(t, 0, r.code, r)

	// Usage and API errors exit 5 with one line on stderr.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"traces"}, "missing subcommand: list, get, pin, unpin, delete or export"},
		{[]string{"traces", "replay"}, `unknown subcommand "replay"`},
		{[]string{"traces", "get"}, "missing TRACE_ID"},
		{[]string{"traces", "get", "a", "b"}, "unexpected arguments after TRACE_ID: b"},
		{[]string{"traces", "list", "extra"}, "unexpected arguments: extra"},
		{[]string{"traces", "list", "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"traces", "list", "--task", "Not A Key"}, "InvalidArgument"},
		{[]string{"traces", "export", ids[1]}, "--format must be go or steps"},
		{[]string{"traces", "export", ids[1], "--format", "xml"}, "--format must be go or steps"},
		{[]string{"traces", "pin", "not-a-trace"}, "NotFound"},
		{[]string{"traces", "delete", ids[0]}, "NotFound"},
	} {
		r := c.run(t, tc.args...)
		require.Equal(t, 5, r.code, "%v: %s", tc.args, r)
		require.Contains(t, r.stderr, tc.want, "%v", tc.args)
		if len(tc.args) > 1 { // with no subcommand, the usage comes first
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %s", tc.args, r)
		}
	}
	r = c.run(t, "traces", "-h")
	require.Equal(t, 0, r.code, r)
	require.Contains(t, r.stderr, "wayfinder traces export TRACE_ID --format go|steps [-o FILE]")
}
