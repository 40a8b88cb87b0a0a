package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// tracesUsage lists the `wayfinder traces` subcommands.
const tracesUsage = `usage:
  wayfinder traces list [--task KEY] [--pinned] [--limit N]
  wayfinder traces get TRACE_ID
  wayfinder traces pin TRACE_ID
  wayfinder traces unpin TRACE_ID
  wayfinder traces delete TRACE_ID
  wayfinder traces export TRACE_ID --format go|steps [-o FILE]
`

// tracesCmd is `wayfinder traces SUBCOMMAND`: the replayable traces of
// completed runs (record and replay).
func tracesCmd(ctx context.Context, s *session, args []string) (int, error) {
	return dispatch(ctx, s, args, tracesUsage, []subcommand{
		{"list", tracesList}, {"get", tracesGet}, {"pin", tracesPin(true)}, {"unpin", tracesPin(false)},
		{"delete", tracesDelete}, {"export", tracesExport},
	})
}

// traceClient connects and returns the TraceService client.
func (s *session) traceClient() (wfv1.TraceServiceClient, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	return wfv1.NewTraceServiceClient(s.conn), nil
}

// traceArg parses a command that takes a trace ID and connects.
func (s *session) traceArg(name string, args []string) (string, wfv1.TraceServiceClient, error) {
	fs := s.flags("traces "+name, "traces "+name+" TRACE_ID")
	pos, err := s.parse(fs, args)
	if err != nil {
		return "", nil, err
	}
	id, err := oneArg(pos, "TRACE_ID")
	if err != nil {
		return "", nil, err
	}
	tc, err := s.traceClient()
	return id, tc, err
}

func tracesList(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("traces list", "traces list [--task KEY] [--pinned] [--limit N]")
	var (
		task   string
		pinned bool
		limit  int
	)
	fs.StringVar(&task, "task", "", "only the traces of this task (its key: TASK in the list, task_key in JSON)")
	fs.BoolVar(&pinned, "pinned", false, "only pinned traces")
	fs.IntVar(&limit, "limit", 50, "at most this many traces, newest first")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usageErrorf("unexpected arguments: %s", strings.Join(pos, " "))
	}
	if limit < 1 {
		return 0, usageErrorf("--limit must be at least 1")
	}
	tc, err := s.traceClient()
	if err != nil {
		return 0, err
	}
	traces, err := listAll(ctx, s, limit, func(ctx context.Context, token string) ([]*wfv1.Trace, string, error) {
		resp, err := tc.ListTraces(ctx, &wfv1.ListTracesRequest{PageSize: int32(min(limit, 500)), PageToken: token,
			TaskKey: task, PinnedOnly: pinned})
		return resp.GetTraces(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSONLines(s.env.Stdout, traces)
	}
	tw := tabwriter.NewWriter(s.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tVERSION\tPINNED\tACTIONS\tCREATED\tGOAL")
	for _, t := range traces {
		created := ""
		if ts := t.GetCreateTime(); ts != nil {
			created = ts.AsTime().Local().Format(time.DateTime)
		}
		pin := ""
		if t.GetPinned() {
			pin = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", t.GetId(), t.GetTaskKey(), t.GetVersion(), pin, t.GetActionCount(),
			created, oneLine(t.GetGoal(), 60))
	}
	return exitOK, tw.Flush()
}

func tracesGet(ctx context.Context, s *session, args []string) (int, error) {
	id, tc, err := s.traceArg("get", args)
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	t, err := tc.GetTrace(cctx, &wfv1.GetTraceRequest{TraceId: id})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSON(s.env.Stdout, t)
	}
	printTrace(s.env.Stdout, t)
	return exitOK, nil
}

// printTrace writes a trace's details for people: one line per action.
func printTrace(w io.Writer, t *wfv1.Trace) {
	var b strings.Builder
	row := func(k, v string) {
		if v != "" {
			// A start URL may hold C1 and bidi controls (url.Parse lets
			// them through): no text of a trace drives the terminal.
			fmt.Fprintf(&b, "%-12s %s\n", k+":", oneLine(v, 4096))
		}
	}
	row("trace", t.GetId())
	row("task", t.GetTaskKey())
	version := strconv.Itoa(int(t.GetVersion()))
	if t.GetPinned() {
		version += " (pinned)"
	}
	row("version", version)
	row("healed from", t.GetHealedFrom())
	if ts := t.GetCreateTime(); ts != nil {
		row("created", ts.AsTime().Local().Format(time.DateTime))
	}
	row("goal", oneLine(t.GetGoal(), 200))
	row("start URL", t.GetStartUrl())
	if u := t.GetRecordedUsage(); u.GetModelCalls() > 0 {
		row("model cost", formatUsage(u)+" (what a replay saves)")
	}
	row("actions", strconv.Itoa(int(t.GetActionCount())))
	for _, a := range t.GetActions() {
		fmt.Fprintf(&b, "  %3d  %s", a.GetStep(), traceActionText(a))
		if a.GetUrlPattern() != "" {
			fmt.Fprintf(&b, "  on %s", oneLine(a.GetUrlPattern(), 4096))
		}
		b.WriteString("\n")
		if e := a.GetTargetError(); e != "" {
			fmt.Fprintf(&b, "       (no fingerprint: %s)\n", oneLine(e, 200))
		}
	}
	f := t.GetFinal()
	row("final URL", f.GetUrl())
	row("final page", f.GetUrlPattern())
	if v := f.GetVerdict(); v != nil {
		row("verdict", fmt.Sprintf("done=%t (%.2f) %s", v.GetDone(), v.GetConfidence(), oneLine(v.GetReason(), 200)))
	}
	row("reason", oneLine(f.GetReason(), 300))
	_, _ = io.WriteString(w, b.String())
}

// traceActionText is a recorded action on one line: its tool, its
// target's role and name, and its main argument.
func traceActionText(a *wfv1.TraceAction) string {
	s := oneLine(a.GetTool(), 80)
	if tg := a.GetTarget().AsMap(); tg != nil {
		if r, _ := tg["role"].(string); r != "" {
			s += " " + oneLine(r, 80)
		}
		if n, _ := tg["name"].(string); n != "" {
			s += " " + strconv.Quote(oneLine(n, 80))
		}
	}
	args := a.GetArguments().AsMap()
	for _, k := range []string{"value", "text", "url", "keys", "direction", "rows"} {
		if v, ok := args[k].(string); ok && v != "" {
			s += " " + k + "=" + strconv.Quote(oneLine(v, 80))
			break
		}
	}
	return s
}

// tracesPin is `wayfinder traces pin|unpin TRACE_ID`.
func tracesPin(on bool) func(context.Context, *session, []string) (int, error) {
	verb := "unpin"
	if on {
		verb = "pin"
	}
	return func(ctx context.Context, s *session, args []string) (int, error) {
		id, tc, err := s.traceArg(verb, args)
		if err != nil {
			return 0, err
		}
		cctx, cancel := s.call(ctx)
		defer cancel()
		t, err := tc.PinTrace(cctx, &wfv1.PinTraceRequest{TraceId: id, Pinned: on})
		if err != nil {
			return 0, err
		}
		if s.json {
			return exitOK, printJSON(s.env.Stdout, t)
		}
		if on {
			fmt.Fprintf(s.env.Stdout, "trace %s pinned: replays of task %s follow it (version %d)\n", t.GetId(), t.GetTaskKey(), t.GetVersion())
		} else {
			fmt.Fprintf(s.env.Stdout, "trace %s unpinned: replays of task %s follow its pinned or newest trace\n", t.GetId(), t.GetTaskKey())
		}
		return exitOK, nil
	}
}

func tracesDelete(ctx context.Context, s *session, args []string) (int, error) {
	id, tc, err := s.traceArg("delete", args)
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := tc.DeleteTrace(cctx, &wfv1.DeleteTraceRequest{TraceId: id}); err != nil {
		return 0, err
	}
	if s.json {
		fmt.Fprintf(s.env.Stdout, "{\"trace_id\":%q,\"deleted\":true}\n", id)
		return exitOK, nil
	}
	fmt.Fprintf(s.env.Stdout, "trace %s deleted (its run stays)\n", id)
	return exitOK, nil
}

// exportFormats are the --format names of `traces export`.
var exportFormats = map[string]wfv1.TraceExportFormat{
	"go":    wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_GO_TEST,
	"steps": wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS,
}

// tracesExport is `wayfinder traces export TRACE_ID --format go|steps [-o FILE]`.
func tracesExport(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("traces export", "traces export TRACE_ID --format go|steps [-o FILE]")
	var format, out string
	fs.StringVar(&format, "format", "", "go (a standalone go-rod test) or steps (a step list for the offline controller); required")
	fs.StringVar(&out, "o", "", "file to write (default stdout)")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	id, err := oneArg(pos, "TRACE_ID")
	if err != nil {
		return 0, err
	}
	f, ok := exportFormats[strings.ToLower(format)]
	if !ok {
		return 0, usageErrorf("--format must be go or steps")
	}
	tc, err := s.traceClient()
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	resp, err := tc.ExportTrace(cctx, &wfv1.ExportTraceRequest{TraceId: id, Format: f})
	if err != nil {
		return 0, err
	}
	if out == "" || out == "-" {
		if s.json {
			return exitOK, printJSON(s.env.Stdout, resp)
		}
		_, err := io.WriteString(s.env.Stdout, resp.GetContent())
		return exitOK, err
	}
	if err := writeFile(out, []byte(resp.GetContent())); err != nil {
		return 0, err
	}
	if s.json {
		fmt.Fprintf(s.env.Stdout, "{\"trace_id\":%q,\"path\":%q,\"bytes\":%d}\n", id, out, len(resp.GetContent()))
		return exitOK, nil
	}
	fmt.Fprintf(s.env.Stdout, "wrote %s (trace %s, %s)\n", out, id, strings.ToLower(format))
	return exitOK, nil
}
