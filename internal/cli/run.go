package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// runCmd is `wayfinder run`: create a run and, with --follow, watch it.
func runCmd(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("run", "run --goal GOAL --url URL [--allow DOMAIN]… [--follow] [flags]")
	var (
		goal, url, provider, model, paramsFile, requestID string
		allow, block                                      stringList
		labels                                            labelList
		maxSteps                                          int
		follow, exitOnApproval                            bool
	)
	fs.StringVar(&goal, "goal", "", "what the run should achieve (plain steps work offline with --provider steps)")
	fs.StringVar(&url, "url", "", "absolute http(s) URL the browser opens first")
	fs.Var(&allow, "allow", "domain the browser may visit (repeatable); naming 127.0.0.1 or localhost allows it")
	fs.Var(&block, "block", "domain the browser must never reach (repeatable)")
	fs.IntVar(&maxSteps, "max-steps", 0, "step limit, 1-500 (default: the server's, 25)")
	fs.Var(&labels, "label", "key=value label (repeatable)")
	fs.StringVar(&provider, "provider", "", "controller model provider: anthropic, openai, gemini, steps")
	fs.StringVar(&model, "model", "", "controller model name")
	fs.StringVar(&paramsFile, "params", "", "RunParams as protobuf JSON from a file (- for stdin); flags override its fields")
	fs.BoolVar(&follow, "follow", false, "stream the run's events until it ends; the exit code tells how it ended")
	fs.BoolVar(&exitOnApproval, "exit-on-approval", false, "with --follow: stop and exit 6 when the run waits for approval")
	fs.StringVar(&requestID, "request-id", "", "idempotency key: repeating the command with it returns the same run")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usageErrorf("unexpected arguments: %s (quote the goal: --goal \"…\")", strings.Join(pos, " "))
	}
	if exitOnApproval && !follow {
		return 0, usageErrorf("--exit-on-approval needs --follow")
	}
	p := &wfv1.RunParams{}
	if paramsFile != "" {
		if p, err = readParams(s.env.Stdin, paramsFile); err != nil {
			return 0, err
		}
	}
	if isSet(fs, "goal") {
		p.Goal = goal
	}
	if isSet(fs, "url") {
		p.StartUrl = url
	}
	if len(allow) > 0 {
		p.AllowedDomains = allow
	}
	if len(block) > 0 {
		p.BlockedDomains = block
	}
	if isSet(fs, "max-steps") {
		p.MaxSteps = int32(min(max(maxSteps, math.MinInt32), math.MaxInt32)) // the server checks the range
	}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	if provider != "" || model != "" {
		if p.Controller == nil {
			p.Controller = &wfv1.ModelSettings{}
		}
		if provider != "" {
			p.Controller.Provider = provider
		}
		if model != "" {
			p.Controller.Model = model
		}
	}
	if err := s.connect(); err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	run, err := s.runs.CreateRun(cctx, &wfv1.CreateRunRequest{Params: p, RequestId: requestID})
	cancel()
	if err != nil {
		return 0, err
	}
	if !follow {
		if s.json {
			return exitOK, printJSON(s.env.Stdout, run)
		}
		fmt.Fprintln(s.env.Stdout, run.GetId())
		return exitOK, nil
	}
	if !s.json {
		fmt.Fprintf(s.env.Stdout, "run %s\n", run.GetId())
	}
	return s.watch(ctx, run.GetId(), 0, run, watchOpts{exitOnApproval: exitOnApproval})
}

// readParams reads RunParams in protobuf JSON from a file or stdin ("-").
func readParams(stdin io.Reader, name string) (*wfv1.RunParams, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageErrorf("--params: %v", err)
	}
	p := &wfv1.RunParams{}
	if err := protojson.Unmarshal(b, p); err != nil {
		return nil, usageErrorf("--params %s: not RunParams JSON: %v", name, err)
	}
	return p, nil
}

// watchOpts say how watch shows a run.
type watchOpts struct {
	// exitOnApproval stops at the first AWAITING_APPROVAL (exit 6).
	exitOnApproval bool
	// log prints every event as a line (runs events) instead of the
	// progress display and the summary (run --follow).
	log bool
}

// watch follows a run's events from after, shows them (the display, an
// event log, or JSON lines) and returns the exit code of how the run
// ended. known, when not nil, is the run as last fetched.
func (s *session) watch(ctx context.Context, runID string, after int64, known *wfv1.Run, o watchOpts) (int, error) {
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		fctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	defer cancel()

	d := newDisplay(s.env.Stdout, s.env.Terminal && !s.json && !o.log, s.env.Getenv("COLUMNS"), runID, known)
	notice := d.notice
	if s.json {
		notice = func(msg string) { fmt.Fprintf(s.env.Stderr, "%s: %s\n", s.prefix, msg) }
	}
	if d.live {
		tickCtx, stopTicks := context.WithCancel(ctx)
		ticked := make(chan struct{})
		go func() {
			defer close(ticked)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-tickCtx.Done():
					return
				case <-t.C:
					d.tick()
				}
			}
		}()
		defer func() { stopTicks(); <-ticked }()
	}

	var printErr error
	awaiting := false
	handle := func(ev *wfv1.RunEvent) bool {
		switch {
		case s.json:
			printErr = printJSON(s.env.Stdout, ev)
		case o.log:
			_, printErr = fmt.Fprintln(s.env.Stdout, eventLine(ev))
		default:
			d.event(ev)
		}
		awaiting = ev.GetStatus() == wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL
		// A replayed pause that was answered long ago is history: stop
		// only at one that is current (at or after the newest event the
		// run had when the watch began).
		current := ev.GetSequence() >= known.GetLastEventSequence()
		return (o.exitOnApproval && awaiting && current) || printErr != nil
	}
	res, err := s.follow(fctx, runID, after, handle, notice)
	d.stop()
	switch {
	case printErr != nil:
		return 0, printErr
	case err != nil && ctx.Err() != nil:
		return 0, &exitWith{code: exitInterrupt, msg: fmt.Sprintf("stopped following run %s; it goes on (wayfinder runs cancel %s to stop it)", runID, runID)}
	case err != nil && errors.Is(err, context.DeadlineExceeded) && fctx.Err() != nil:
		return 0, &exitWith{code: exitTimeout, msg: fmt.Sprintf("--timeout %s passed while following run %s; it goes on (wayfinder runs events %s --follow --after %d)", s.timeout, runID, runID, res.last)}
	case err != nil:
		return 0, err
	case res.run == nil && awaiting:
		if !s.json && !o.log {
			fmt.Fprintf(s.env.Stdout, "\nAWAITING_APPROVAL\n%-12s %s\n", "run:", runID)
		}
		return exitApproval, nil
	case res.run == nil:
		return 0, fmt.Errorf("run %s: the event stream ended without the run's end", runID)
	}
	if !s.json && !o.log {
		printSummary(s.env.Stdout, res.run)
	}
	return exitCodeFor(res.run.GetStatus()), nil
}
