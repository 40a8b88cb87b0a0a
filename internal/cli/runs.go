package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// runsUsage lists the `wayfinder runs` subcommands.
const runsUsage = `usage:
  wayfinder runs list [--status S]… [--label K=V]… [--limit N]
  wayfinder runs get RUN_ID
  wayfinder runs cancel RUN_ID [--reason TEXT]
  wayfinder runs events RUN_ID [--follow] [--after N]
  wayfinder runs steps RUN_ID
`

// runsCmd is `wayfinder runs SUBCOMMAND`.
func runsCmd(ctx context.Context, s *session, args []string) (int, error) {
	return dispatch(ctx, s, args, runsUsage, []subcommand{
		{"list", runsList}, {"get", runsGet}, {"cancel", runsCancel}, {"events", runsEvents}, {"steps", runsSteps},
	})
}

// subcommand is one of a command's subcommands.
type subcommand struct {
	name string
	run  func(context.Context, *session, []string) (int, error)
}

// dispatch runs the subcommand args[0] names; with none, or asked for
// help, it prints usage (no subcommand is a usage error).
func dispatch(ctx context.Context, s *session, args []string, usage string, subs []subcommand) (int, error) {
	names := make([]string, len(subs))
	for i, sc := range subs {
		names[i] = sc.name
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(s.env.Stderr, usage)
		if len(args) == 0 {
			return 0, usageErrorf("missing subcommand: %s", list)
		}
		return exitOK, nil
	}
	for _, sc := range subs {
		if sc.name == args[0] {
			s.prefix += " " + args[0]
			return sc.run(ctx, s, args[1:])
		}
	}
	return 0, usageErrorf("unknown subcommand %q: %s", args[0], list)
}

func runsList(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("runs list", "runs list [--status S]… [--label K=V]… [--limit N]")
	var (
		statuses statusList
		labels   labelList
		limit    int
	)
	fs.Var(&statuses, "status", "only runs in this status (repeatable): queued, running, awaiting_approval, completed, failed, max_steps_reached, error, cancelled")
	fs.Var(&labels, "label", "only runs with this key=value label (repeatable; all must match)")
	fs.IntVar(&limit, "limit", 20, "at most this many runs, newest first")
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
	if err := s.connect(); err != nil {
		return 0, err
	}
	runs, err := listAll(ctx, s, limit, func(ctx context.Context, token string) ([]*wfv1.Run, string, error) {
		resp, err := s.runs.ListRuns(ctx, &wfv1.ListRunsRequest{PageSize: int32(min(limit, 200)), Statuses: statuses, Labels: labels, PageToken: token})
		return resp.GetRuns(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSONLines(s.env.Stdout, runs)
	}
	tw := tabwriter.NewWriter(s.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tSTEPS\tCREATED\tGOAL")
	for _, r := range runs {
		created := ""
		if ts := r.GetCreateTime(); ts != nil {
			created = ts.AsTime().Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.GetId(), statusName(r.GetStatus()), r.GetStepCount(), created, oneLine(r.GetParams().GetGoal(), 60))
	}
	return exitOK, tw.Flush()
}

// runArg parses a command that takes a run ID and connects.
func (s *session) runArg(fsName, usage string, args []string, extra func(*flag.FlagSet)) (string, error) {
	fs := s.flags(fsName, usage)
	if extra != nil {
		extra(fs)
	}
	pos, err := s.parse(fs, args)
	if err != nil {
		return "", err
	}
	id, err := oneArg(pos, "RUN_ID")
	if err != nil {
		return "", err
	}
	return id, s.connect()
}

func runsGet(ctx context.Context, s *session, args []string) (int, error) {
	id, err := s.runArg("runs get", "runs get RUN_ID", args, nil)
	if err != nil {
		return 0, err
	}
	run, err := s.getRun(ctx, id)
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSON(s.env.Stdout, run)
	}
	printRun(s.env.Stdout, run)
	return exitOK, nil
}

func runsCancel(ctx context.Context, s *session, args []string) (int, error) {
	var reason string
	id, err := s.runArg("runs cancel", "runs cancel RUN_ID [--reason TEXT]", args, func(fs *flag.FlagSet) {
		fs.StringVar(&reason, "reason", "", "recorded with the cancellation")
	})
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	run, err := s.runs.CancelRun(cctx, &wfv1.CancelRunRequest{RunId: id, Reason: reason})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSON(s.env.Stdout, run)
	}
	if ended(run.GetStatus()) && run.GetStatus() != wfv1.RunStatus_RUN_STATUS_CANCELLED {
		fmt.Fprintf(s.env.Stdout, "run %s had already ended: %s\n", id, statusName(run.GetStatus()))
	} else {
		fmt.Fprintf(s.env.Stdout, "run %s: cancel requested (%s)\n", id, statusName(run.GetStatus()))
	}
	return exitOK, nil
}

func runsEvents(ctx context.Context, s *session, args []string) (int, error) {
	var (
		follow, exitOnApproval bool
		after                  int64
	)
	id, err := s.runArg("runs events", "runs events RUN_ID [--follow] [--after N]", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&follow, "follow", false, "keep following until the run ends; the exit code tells how it ended")
		fs.BoolVar(&exitOnApproval, "exit-on-approval", false, "with --follow: stop and exit 6 when the run waits for approval")
		fs.Int64Var(&after, "after", 0, "only events after this sequence number")
	})
	if err != nil {
		return 0, err
	}
	if after < 0 {
		return 0, usageErrorf("--after must not be negative")
	}
	if exitOnApproval && !follow {
		return 0, usageErrorf("--exit-on-approval needs --follow")
	}
	run, err := s.getRun(ctx, id)
	if err != nil {
		return 0, err
	}
	if follow {
		return s.watch(ctx, id, after, run, watchOpts{exitOnApproval: exitOnApproval, log: true})
	}
	// The events so far: up to the newest one when the call was made.
	upTo := run.GetLastEventSequence()
	if upTo <= after {
		return exitOK, nil
	}
	var printErr error
	cctx, cancel := s.call(ctx)
	defer cancel()
	_, err = s.follow(cctx, id, after, func(ev *wfv1.RunEvent) bool {
		if s.json {
			printErr = printJSON(s.env.Stdout, ev)
		} else {
			_, printErr = fmt.Fprintln(s.env.Stdout, eventLine(ev))
		}
		return ev.GetSequence() >= upTo || printErr != nil
	}, func(msg string) { fmt.Fprintf(s.env.Stderr, "%s: %s\n", s.prefix, msg) })
	if printErr != nil {
		return 0, printErr
	}
	return exitOK, err
}

// eventLine is one event as a line of the event log.
func eventLine(ev *wfv1.RunEvent) string {
	ts := ""
	if ev.GetTime() != nil {
		ts = ev.GetTime().AsTime().Local().Format("15:04:05.000")
	}
	typ := strings.TrimPrefix(ev.GetType().String(), "RUN_EVENT_TYPE_")
	line := fmt.Sprintf("%5d  %s  %-18s %-17s %s", ev.GetSequence(), ts, typ, statusName(ev.GetStatus()), oneLine(ev.GetMessage(), 300))
	switch {
	case ev.GetStep() != nil && ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED:
		acts := make([]string, 0, len(ev.GetStep().GetActions()))
		for _, a := range ev.GetStep().GetActions() {
			acts = append(acts, actionText(a))
		}
		if len(acts) > 0 {
			line += " [" + strings.Join(acts, ", ") + "]"
		}
	case ev.GetRun() != nil && ev.GetRun().GetError() != nil:
		line += " [" + errorText(ev.GetRun().GetError()) + "]"
	case ev.GetApproval() != nil && ev.GetMessage() == "":
		line += approvalText(ev.GetApproval())
	}
	return strings.TrimRight(line, " ")
}

func runsSteps(ctx context.Context, s *session, args []string) (int, error) {
	id, err := s.runArg("runs steps", "runs steps RUN_ID", args, nil)
	if err != nil {
		return 0, err
	}
	var steps []*wfv1.Step
	req := &wfv1.ListStepsRequest{RunId: id, PageSize: 500}
	for {
		cctx, cancel := s.call(ctx)
		resp, err := s.runs.ListSteps(cctx, req)
		cancel()
		if err != nil {
			return 0, err
		}
		steps = append(steps, resp.GetSteps()...)
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if s.json {
		for _, st := range steps {
			if err := printJSON(s.env.Stdout, st); err != nil {
				return 0, err
			}
		}
		return exitOK, nil
	}
	var b strings.Builder
	for _, st := range steps {
		fmt.Fprintf(&b, "step %d", st.GetNumber())
		if st.GetActor() != "" && st.GetActor() != "model" {
			fmt.Fprintf(&b, " (%s)", st.GetActor())
		}
		if st.GetStartTime() != nil && st.GetEndTime() != nil {
			fmt.Fprintf(&b, " · %s", formatDuration(st.GetEndTime().AsTime().Sub(st.GetStartTime().AsTime())))
		}
		if u := st.GetUsage(); u.GetModelCalls() > 0 {
			fmt.Fprintf(&b, " · %s tokens · %s", formatCount(u.GetInputTokens()+u.GetOutputTokens()), formatCost(u.GetCostUsd()))
		}
		b.WriteString("\n")
		if st.GetUrl() != "" {
			fmt.Fprintf(&b, "  page:       %s", st.GetUrl())
			if st.GetTitle() != "" {
				fmt.Fprintf(&b, " (%s)", oneLine(st.GetTitle(), 80))
			}
			b.WriteString("\n")
		}
		if st.GetReasoning() != "" {
			fmt.Fprintf(&b, "  reasoning:  %s\n", oneLine(st.GetReasoning(), 300))
		}
		for _, a := range st.GetActions() {
			fmt.Fprintf(&b, "  action:     %s", actionText(a))
			if a.GetMessage() != "" {
				fmt.Fprintf(&b, " (%s)", oneLine(a.GetMessage(), 200))
			}
			b.WriteString("\n")
		}
		if v := st.GetVerdict(); v != nil && (v.GetReason() != "" || v.GetDone() || v.GetFailed()) {
			fmt.Fprintf(&b, "  judge:      done=%t failed=%t (%.2f) %s\n", v.GetDone(), v.GetFailed(), v.GetConfidence(), oneLine(v.GetReason(), 200))
		}
		if e := st.GetError(); e != nil {
			fmt.Fprintf(&b, "  error:      %s\n", errorText(e))
		}
		for _, br := range st.GetBlockedRequests() {
			fmt.Fprintf(&b, "  blocked:    %s %s (%s)\n", br.GetKind(), oneLine(br.GetUrl(), 120), br.GetReason())
		}
		if m := st.GetScreenshotMediaId(); m != "" {
			fmt.Fprintf(&b, "  screenshot: %s\n", m)
		}
	}
	_, err = fmt.Fprint(s.env.Stdout, b.String())
	return exitOK, err
}
