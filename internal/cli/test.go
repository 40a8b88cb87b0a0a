package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/suite"
)

// maxSuiteFile is the largest suite file the server takes
// (ImportSuiteRequest.yaml).
const maxSuiteFile = 1 << 20

// cancelWait bounds how long an interrupted `test run` waits for the
// suite run it cancelled to end (its runs stop within seconds).
const cancelWait = 30 * time.Second

// testUsage lists the `wayfinder test` subcommands.
const testUsage = `usage:
  wayfinder test run FILE.yaml [--tags a,b] [--junit PATH] [--json-report PATH] [--request-id ID] [--no-import]
  wayfinder test run --suite NAME [--tags a,b] [--junit PATH] [--json-report PATH] [--request-id ID]
  wayfinder test get SUITE_RUN_ID [--junit PATH] [--json-report PATH]
  wayfinder test runs [--suite NAME] [--limit N]
  wayfinder test list [--limit N]
  wayfinder test export SUITE [-o FILE]
`

// testCmd is `wayfinder test SUBCOMMAND`: test suites, for people and CI.
func testCmd(ctx context.Context, s *session, args []string) (int, error) {
	return dispatch(ctx, s, args, testUsage, []subcommand{
		{"run", testRun}, {"get", testGet}, {"runs", testRuns}, {"list", testList}, {"export", testExport},
	})
}

// testClient connects and returns the TestService client.
func (s *session) testClient() (wfv1.TestServiceClient, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	return wfv1.NewTestServiceClient(s.conn), nil
}

// reportFlags are the report files a command writes for a suite run.
type reportFlags struct{ junit, json string }

func (r *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.junit, "junit", "", "write the JUnit XML report to this file once the suite run has ended")
	fs.StringVar(&r.json, "json-report", "", "write the JSON report to this file once the suite run has ended")
}

// check refuses report paths whose directory does not exist, before a
// suite runs for minutes only to lose its report.
func (r *reportFlags) check() error {
	for flagName, p := range map[string]string{"--junit": r.junit, "--json-report": r.json} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(filepath.Dir(p))
		if err != nil || !fi.IsDir() {
			return usageErrorf("%s %s: directory %s does not exist", flagName, p, filepath.Dir(p))
		}
	}
	return nil
}

// write writes the reports of a suite run that has ended and returns the
// lines that say where they are.
func (r *reportFlags) write(sr *wfv1.SuiteRun) ([]string, error) {
	var notes []string
	for _, rep := range []struct {
		flag, path, what string
		render           func(*wfv1.SuiteRun) ([]byte, error)
	}{
		{"--junit", r.junit, "JUnit report", suite.JUnit},
		{"--json-report", r.json, "JSON report", suite.JSONReport},
	} {
		if rep.path == "" {
			continue
		}
		b, err := rep.render(sr)
		if err == nil {
			err = writeFile(rep.path, b)
		}
		if err != nil {
			return notes, fmt.Errorf("%s %s: %w", rep.flag, rep.path, err)
		}
		notes = append(notes, fmt.Sprintf("%s: %s", rep.what, rep.path))
	}
	return notes, nil
}

// tagList is a tag filter flag: comma-separated, repeatable.
type tagList []string

func (l *tagList) String() string { return strings.Join(*l, ",") }

func (l *tagList) Set(v string) error {
	for t := range strings.SplitSeq(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			*l = append(*l, t)
		}
	}
	return nil
}

// testRun is `wayfinder test run`: import a suite file (or name a stored
// suite), run it, show each test's progress on stderr, write the reports
// and exit by the suite run's status.
func testRun(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("test run", "test run FILE.yaml [--tags a,b] [--junit PATH] [--json-report PATH] [flags]\n       wayfinder test run --suite NAME [flags]\n\nexit: 0 PASSED, 1 FAILED, 3 ERROR, 4 CANCELLED (Ctrl-C cancels the suite run), 5 usage or API error, 7 --timeout")
	var (
		tags                 tagList
		reports              reportFlags
		requestID, suiteName string
		noImport             bool
	)
	fs.Var(&tags, "tags", "only the tests with at least one of these tags (comma-separated, repeatable)")
	reports.register(fs)
	fs.StringVar(&requestID, "request-id", "", "idempotency key (e.g. the CI job's ID): repeating the command with it watches the same suite run")
	fs.StringVar(&suiteName, "suite", "", "run this stored suite (no FILE, nothing imported)")
	fs.BoolVar(&noImport, "no-import", false, "run the stored suite that FILE names, without importing FILE")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if suiteName != "" && len(pos) > 0 {
		return 0, usageErrorf("FILE and --suite exclude each other (--suite runs a stored suite)")
	}
	if err := reports.check(); err != nil {
		return 0, err
	}
	var yaml []byte
	if suiteName == "" {
		file, err := oneArg(pos, "FILE (or --suite NAME)")
		if err != nil {
			return 0, err
		}
		if yaml, err = readSuiteFile(s.env.Stdin, file); err != nil {
			return 0, err
		}
		if noImport {
			su, _, err := suite.ParseFile(yaml)
			if err != nil {
				return 0, usageErrorf("%s: %v", file, err)
			}
			suiteName = su.GetName()
		}
	}
	tc, err := s.testClient()
	if err != nil {
		return 0, err
	}
	if suiteName == "" {
		cctx, cancel := s.call(ctx)
		resp, err := tc.ImportSuite(cctx, &wfv1.ImportSuiteRequest{Yaml: string(yaml)})
		cancel()
		if err != nil {
			return 0, err
		}
		suiteName = resp.GetSuite().GetName()
		fmt.Fprintf(s.env.Stderr, "imported suite %s (%s)\n", suiteName, plural(int64(len(resp.GetTests())), "test"))
	}
	// An interrupt does not cut the start short: the server may have
	// started the suite run already, and its ID is needed to cancel it
	// (the watch below sees the interrupt and cancels it).
	cctx, cancel := s.call(context.WithoutCancel(ctx))
	sr, err := tc.StartSuiteRun(cctx, &wfv1.StartSuiteRunRequest{Suite: suiteName, Tags: tags, RequestId: requestID})
	cancel()
	if err != nil {
		return 0, err
	}
	total := int64(len(sr.GetResults()))
	if total == 0 {
		total = int64(sr.GetSummary().GetTotal())
	}
	fmt.Fprintf(s.env.Stderr, "suite run %s: suite %s, %s\n", sr.GetId(), suiteName, plural(total, "test"))

	d := newSuiteDisplay(s.env.Stderr, stderrIsTerminal(s.env), s.env.Getenv("COLUMNS"))
	defer d.stop()
	d.startTicks(ctx)
	d.update(sr)

	fctx, cancelWatch := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		fctx, cancelWatch = context.WithTimeout(ctx, s.timeout)
	}
	defer cancelWatch()
	final, err := s.watchSuite(fctx, tc, sr, d.update, d.notice)
	switch {
	case err != nil && ctx.Err() != nil:
		if final, err = s.cancelSuite(ctx, tc, sr.GetId(), d); err != nil {
			return 0, err
		}
	case err != nil && fctx.Err() != nil:
		return 0, &exitWith{code: exitTimeout, msg: fmt.Sprintf("--timeout %s passed while watching suite run %s; it goes on (wayfinder test get %s)", s.timeout, sr.GetId(), sr.GetId())}
	case err != nil:
		return 0, err
	}
	d.stop()
	return s.finishSuite(final, reports, true)
}

// cancelSuite cancels an interrupted suite run and waits (at most
// cancelWait) for it to end.
func (s *session) cancelSuite(ctx context.Context, tc wfv1.TestServiceClient, id string, d *suiteDisplay) (*wfv1.SuiteRun, error) {
	d.notice("interrupted: cancelling suite run " + id)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	sr, err := tc.CancelSuiteRun(cctx, &wfv1.CancelSuiteRunRequest{Id: id})
	if err != nil {
		return nil, &exitWith{code: exitInterrupt, msg: fmt.Sprintf("interrupted, and could not cancel suite run %s: %s; it goes on", id, s.describe(err))}
	}
	d.update(sr)
	if suiteEnded(sr.GetStatus()) {
		return sr, nil
	}
	final, err := s.watchSuite(cctx, tc, sr, d.update, d.notice)
	if err != nil {
		return nil, &exitWith{code: exitCancelled, msg: fmt.Sprintf("interrupted: cancel requested for suite run %s; it is still stopping (wayfinder test get %s)", id, id)}
	}
	return final, nil
}

// finishSuite writes the reports and the summary of a suite run that has
// ended and returns the exit code of its status (or exitOK when
// byStatus is false).
func (s *session) finishSuite(sr *wfv1.SuiteRun, reports reportFlags, byStatus bool) (int, error) {
	notes, werr := reports.write(sr)
	if s.json {
		if err := printJSON(s.env.Stdout, sr); err != nil {
			return 0, err
		}
	}
	w := s.env.Stderr
	if !byStatus && !s.json {
		w = s.env.Stdout
	}
	fmt.Fprintln(w, suiteSummaryLine(sr))
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if werr != nil {
		return 0, werr
	}
	if !byStatus {
		return exitOK, nil
	}
	return suiteExitCode(sr.GetStatus()), nil
}

// readSuiteFile reads a suite file, or stdin for "-".
func readSuiteFile(stdin io.Reader, name string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, maxSuiteFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(name); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, maxSuiteFile+1))
			_ = f.Close()
		}
	}
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if len(b) > maxSuiteFile {
		return nil, usageErrorf("%s: a suite file is at most 1 MiB", name)
	}
	return b, nil
}

// watchSuite streams the states of suite run known.id to show until it
// ends and returns the final one. A dropped stream is opened again (the
// server sends the current state first) with backoff, for up to
// s.reconnectFor without progress; notice is told each time. Progress is
// a state that differs from the last one seen: the current state that
// each new stream starts with is not, so a stream that keeps dropping
// right after it is given up.
func (s *session) watchSuite(ctx context.Context, tc wfv1.TestServiceClient, known *wfv1.SuiteRun, show func(*wfv1.SuiteRun), notice func(string)) (*wfv1.SuiteRun, error) {
	id, last := known.GetId(), known
	if suiteEnded(known.GetStatus()) {
		return known, nil
	}
	giveUp := s.reconnectFor
	if giveUp == 0 {
		giveUp = time.Minute
	}
	const firstBackoff, maxBackoff = 200 * time.Millisecond, 5 * time.Second
	backoff, failingSince := firstBackoff, time.Time{}
	for {
		progressed := false
		streamCtx, cancel := context.WithCancel(ctx)
		stream, err := tc.WatchSuiteRun(streamCtx, &wfv1.WatchSuiteRunRequest{Id: id})
		for err == nil {
			var sr *wfv1.SuiteRun
			if sr, err = stream.Recv(); err != nil {
				break
			}
			if !proto.Equal(sr, last) {
				progressed, last = true, sr
			}
			show(sr)
			if suiteEnded(sr.GetStatus()) {
				cancel()
				return sr, nil
			}
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			// The stream ended without a final state: the server closed
			// it on its way down, or the suite run ended in between.
			cctx, cancelGet := s.call(ctx)
			sr, gerr := tc.GetSuiteRun(cctx, &wfv1.GetSuiteRunRequest{Id: id})
			cancelGet()
			switch {
			case gerr == nil && suiteEnded(sr.GetStatus()):
				show(sr)
				return sr, nil
			case gerr != nil && !retryable(gerr):
				return nil, gerr
			}
			err = errors.New("the server ended the stream early")
		} else if !retryable(err) {
			return nil, err
		}
		if progressed || failingSince.IsZero() {
			failingSince, backoff = time.Now(), firstBackoff
		}
		if time.Since(failingSince) > giveUp {
			return nil, fmt.Errorf("lost the stream of suite run %s: %s; it goes on (wayfinder test get %s)", id, s.describe(err), id)
		}
		notice(fmt.Sprintf("suite run stream interrupted (%s); resuming", shortReason(err)))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// testGet is `wayfinder test get SUITE_RUN_ID`: a suite run's results
// (and, once it has ended, its reports).
func testGet(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("test get", "test get SUITE_RUN_ID [--junit PATH] [--json-report PATH]")
	var reports reportFlags
	reports.register(fs)
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	id, err := oneArg(pos, "SUITE_RUN_ID")
	if err != nil {
		return 0, err
	}
	if err := reports.check(); err != nil {
		return 0, err
	}
	tc, err := s.testClient()
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	sr, err := tc.GetSuiteRun(cctx, &wfv1.GetSuiteRunRequest{Id: id})
	cancel()
	if err != nil {
		return 0, err
	}
	if !suiteEnded(sr.GetStatus()) && (reports.junit != "" || reports.json != "") {
		return 0, usageErrorf("suite run %s has not ended (%s): no reports yet", id, suiteStatusName(sr.GetStatus()))
	}
	if !s.json {
		d := newSuiteDisplay(s.env.Stdout, false, "")
		d.update(sr)
	}
	return s.finishSuite(sr, reports, false)
}

// testRuns is `wayfinder test runs`: the suite run history, newest first.
func testRuns(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("test runs", "test runs [--suite NAME] [--limit N]")
	var (
		suiteName string
		limit     int
	)
	fs.StringVar(&suiteName, "suite", "", "only this suite's runs")
	fs.IntVar(&limit, "limit", 20, "at most this many suite runs, newest first")
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
	tc, err := s.testClient()
	if err != nil {
		return 0, err
	}
	runs, err := listAll(ctx, s, limit, func(ctx context.Context, token string) ([]*wfv1.SuiteRun, string, error) {
		resp, err := tc.ListSuiteRuns(ctx, &wfv1.ListSuiteRunsRequest{Suite: suiteName, PageSize: int32(min(limit, 200)), PageToken: token})
		return resp.GetSuiteRuns(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSONLines(s.env.Stdout, runs)
	}
	tw := tabwriter.NewWriter(s.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUITE\tSTATUS\tCREATED\tDURATION\tTESTS")
	for _, r := range runs {
		created, took := "", ""
		if ts := r.GetCreateTime(); ts != nil {
			created = ts.AsTime().Local().Format(time.DateTime)
		}
		if d := suiteDuration(r); d > 0 {
			took = formatDuration(d)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.GetId(), r.GetSuite(), suiteStatusName(r.GetStatus()), created, took, countsText(r.GetSummary()))
	}
	return exitOK, tw.Flush()
}

// testList is `wayfinder test list`: the stored suites.
func testList(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("test list", "test list [--limit N]")
	var limit int
	fs.IntVar(&limit, "limit", 200, "at most this many suites, by name")
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
	tc, err := s.testClient()
	if err != nil {
		return 0, err
	}
	suites, err := listAll(ctx, s, limit, func(ctx context.Context, token string) ([]*wfv1.Suite, string, error) {
		resp, err := tc.ListSuites(ctx, &wfv1.ListSuitesRequest{PageSize: int32(min(limit, 200)), PageToken: token})
		return resp.GetSuites(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSONLines(s.env.Stdout, suites)
	}
	tw := tabwriter.NewWriter(s.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTESTS\tTAGS\tDESCRIPTION")
	for _, su := range suites {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", su.GetName(), len(su.GetTests()), strings.Join(su.GetTags(), ","), oneLine(su.GetDescription(), 60))
	}
	return exitOK, tw.Flush()
}

// testExport is `wayfinder test export SUITE [-o FILE]`: the suite and
// its tests as a suite file.
func testExport(ctx context.Context, s *session, args []string) (int, error) {
	fs := s.flags("test export", "test export SUITE [-o FILE]")
	var out string
	fs.StringVar(&out, "o", "", "file to write (default stdout)")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	name, err := oneArg(pos, "SUITE")
	if err != nil {
		return 0, err
	}
	tc, err := s.testClient()
	if err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	resp, err := tc.ExportSuite(cctx, &wfv1.ExportSuiteRequest{Name: name})
	if err != nil {
		return 0, err
	}
	if out == "" || out == "-" {
		if s.json {
			return exitOK, printJSON(s.env.Stdout, resp)
		}
		_, err := io.WriteString(s.env.Stdout, resp.GetYaml())
		return exitOK, err
	}
	if err := writeFile(out, []byte(resp.GetYaml())); err != nil {
		return 0, err
	}
	if s.json {
		fmt.Fprintf(s.env.Stdout, "{\"suite\":%q,\"path\":%q,\"bytes\":%d}\n", name, out, len(resp.GetYaml()))
		return exitOK, nil
	}
	fmt.Fprintf(s.env.Stdout, "wrote %s (suite %s)\n", out, name)
	return exitOK, nil
}

// suiteEnded reports whether a suite run in status st has ended.
func suiteEnded(st wfv1.SuiteRunStatus) bool {
	switch st {
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:
		return true
	}
	return false
}

// suiteExitCode is the exit code of a suite run that ended in st: the
// codes of a run that ended the same way.
func suiteExitCode(st wfv1.SuiteRunStatus) int {
	switch st {
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED:
		return exitOK
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED:
		return exitFailed
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:
		return exitError
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED:
		return exitCancelled
	}
	return exitUsage
}

func suiteStatusName(st wfv1.SuiteRunStatus) string {
	return strings.TrimPrefix(st.String(), "SUITE_RUN_STATUS_")
}

func outcomeName(o wfv1.TestOutcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "TEST_OUTCOME_"))
}

// suiteDuration is how long a suite run has run (so far).
func suiteDuration(sr *wfv1.SuiteRun) time.Duration {
	start := sr.GetStartTime()
	if start == nil {
		start = sr.GetCreateTime()
	}
	if start == nil {
		return 0
	}
	end := time.Now()
	if sr.GetEndTime() != nil {
		end = sr.GetEndTime().AsTime()
	}
	return max(end.Sub(start.AsTime()), 0)
}

// countsText is "5 tests: 3 passed, 1 flaky, 1 failed".
func countsText(sum *wfv1.SuiteRunSummary) string {
	parts := []string{}
	for _, c := range []struct {
		n    int32
		name string
	}{
		{sum.GetPassed(), "passed"}, {sum.GetFlaky(), "flaky"}, {sum.GetFailed(), "failed"}, {sum.GetErrored(), "errored"},
		{sum.GetSkipped(), "skipped"}, {sum.GetRunning(), "running"}, {sum.GetPending(), "pending"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.name))
		}
	}
	s := plural(int64(sum.GetTotal()), "test")
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// suiteSummaryLine is how a suite run ended, in one line.
func suiteSummaryLine(sr *wfv1.SuiteRun) string {
	sum := sr.GetSummary()
	if sum == nil {
		sum = suite.Summarize(sr.GetResults())
	}
	line := suiteStatusName(sr.GetStatus())
	if d := suiteDuration(sr); d > 0 {
		line += " in " + formatDuration(d)
	}
	line += " · " + countsText(sum) + " · suite run " + sr.GetId()
	if e := sr.GetError(); e != "" {
		line += " · " + oneLine(e, 300)
	}
	return line
}
