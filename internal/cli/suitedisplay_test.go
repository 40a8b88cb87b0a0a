package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// suiteStates is a suite run as a watch sees it: "login" fails once, is
// retried and passes (flaky); "checkout" is first seen when it has already
// failed; "search" is skipped.
func suiteStates() []*wfv1.SuiteRun {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := func(sec float64) *timestamppb.Timestamp {
		return timestamppb.New(t0.Add(time.Duration(sec * float64(time.Second))))
	}
	pending := func(name string) *wfv1.TestResult {
		return &wfv1.TestResult{Test: name, Outcome: wfv1.TestOutcome_TEST_OUTCOME_PENDING}
	}
	failedURL := &wfv1.OracleResult{Name: "url_pattern", Kind: "url_pattern", Detail: `"/done$" did not match http://127.0.0.1:1/cart`, Weight: 1}
	goal := &wfv1.OracleResult{Name: "goal", Kind: "goal", Passed: true, Score: 1, Weight: 1}
	first := &wfv1.TestAttempt{Number: 1, RunId: "run-1", Score: 0.5, Oracles: []*wfv1.OracleResult{goal, failedURL}}
	second := &wfv1.TestAttempt{Number: 2, RunId: "run-2"}
	secondDone := &wfv1.TestAttempt{Number: 2, RunId: "run-2", Passed: true, Score: 1, Oracles: []*wfv1.OracleResult{goal}}
	checkout := &wfv1.TestAttempt{Number: 1, RunId: "run-3", Score: 0.5, Oracles: []*wfv1.OracleResult{goal, {Name: "receipt", Kind: "text_present", Detail: `"Thank you" not on the page`, Required: true}}}
	running := wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING
	return []*wfv1.SuiteRun{
		{Id: "sr-1", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, Results: []*wfv1.TestResult{pending("login"), pending("checkout"), pending("search")}},
		{Id: "sr-1", Status: running, StartTime: ts(0), Results: []*wfv1.TestResult{
			{Test: "login", Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING, Attempts: []*wfv1.TestAttempt{{Number: 1, RunId: "run-1"}}, StartTime: ts(0)},
			pending("checkout"), pending("search"),
		}},
		{Id: "sr-1", Status: running, StartTime: ts(0), Results: []*wfv1.TestResult{
			{Test: "login", Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING, Attempts: []*wfv1.TestAttempt{first, second}, StartTime: ts(0)},
			{Test: "checkout", Outcome: wfv1.TestOutcome_TEST_OUTCOME_FAILED, Score: 0.5, Attempts: []*wfv1.TestAttempt{checkout}, StartTime: ts(0), EndTime: ts(4.2), Message: "receipt failed"},
			pending("search"),
		}},
		// The same again: nothing to show.
		{Id: "sr-1", Status: running, StartTime: ts(0), Results: []*wfv1.TestResult{
			{Test: "login", Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING, Attempts: []*wfv1.TestAttempt{first, second}, StartTime: ts(0)},
			{Test: "checkout", Outcome: wfv1.TestOutcome_TEST_OUTCOME_FAILED, Score: 0.5, Attempts: []*wfv1.TestAttempt{checkout}, StartTime: ts(0), EndTime: ts(4.2), Message: "receipt failed"},
			pending("search"),
		}},
		{Id: "sr-1", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, StartTime: ts(0), EndTime: ts(13), Results: []*wfv1.TestResult{
			{Test: "login", Outcome: wfv1.TestOutcome_TEST_OUTCOME_FLAKY, Score: 1, Attempts: []*wfv1.TestAttempt{first, secondDone}, StartTime: ts(0), EndTime: ts(12.4)},
			{Test: "checkout", Outcome: wfv1.TestOutcome_TEST_OUTCOME_FAILED, Score: 0.5, Attempts: []*wfv1.TestAttempt{checkout}, StartTime: ts(0), EndTime: ts(4.2), Message: "receipt failed"},
			{Test: "search", Outcome: wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, Message: "the suite run was cancelled"},
		}},
	}
}

func TestSuiteDisplayPlain(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := newSuiteDisplay(&out, false, "")
	for _, sr := range suiteStates() {
		d.update(sr)
	}
	d.stop()
	want := `▸ login     running  run run-1
↻ login     attempt 1 failed (0.50): url_pattern: "/done$" did not match http://127.0.0.1:1/cart; retrying (attempt 2)  run run-2
✗ checkout  failed 0.50  4.2s  run run-3: receipt (text_present): "Thank you" not on the page
~ login     flaky 1.00  12.4s  (2 attempts)  run run-2
- search    skipped: the suite run was cancelled
`
	require.Equal(t, want, out.String())
}

// A watch that sees only the end still tells of every attempt.
func TestSuiteDisplayOnlyTheEnd(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	states := suiteStates()
	d := newSuiteDisplay(&out, false, "")
	d.update(states[len(states)-1])
	require.Equal(t, []string{"↻ login", "~ login", "✗ checkout", "- search"}, firstWords(out.String()))
}

func TestSuiteDisplayLive(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := newSuiteDisplay(&out, true, "60")
	d.now = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 7, 0, time.UTC) }
	states := suiteStates()
	d.update(states[2])
	got := out.String()
	require.Contains(t, got, "\x1b[31m✗\x1b[0m checkout", "coloured on a terminal")
	require.True(t, strings.HasSuffix(got, "RUNNING · 1/3 done · 1 running · 1 failed · 7.0s"), "%q", got)
	d.update(states[len(states)-1])
	d.stop()
	got = out.String()
	require.Contains(t, got, "\r\x1b[K", "the live line is redrawn in place")
	require.True(t, strings.HasSuffix(got, "skipped: the suite run was cancelled\n"), "no live line once it ended: %q", got)
}

func TestSuiteSummaryLine(t *testing.T) {
	t.Parallel()
	states := suiteStates()
	sr := states[len(states)-1]
	require.Equal(t, "CANCELLED in 13.0s · 3 tests: 1 flaky, 1 failed, 1 skipped · suite run sr-1", suiteSummaryLine(sr))
	sr.Summary = &wfv1.SuiteRunSummary{Total: 4, Passed: 4}
	sr.Status, sr.Error = wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR, "the suite's tests\nvanished"
	require.Equal(t, "ERROR in 13.0s · 4 tests: 4 passed · suite run sr-1 · the suite's tests vanished", suiteSummaryLine(sr))
}

func TestSuiteExitCode(t *testing.T) {
	t.Parallel()
	for st, want := range map[wfv1.SuiteRunStatus]int{
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED:      0,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED:      1,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:       3,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED:   4,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING:     5,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_UNSPECIFIED: 5,
	} {
		require.Equal(t, want, suiteExitCode(st), st)
	}
}

func TestTagList(t *testing.T) {
	t.Parallel()
	var l tagList
	require.NoError(t, l.Set("smoke, auth,,"))
	require.NoError(t, l.Set("nightly"))
	require.Equal(t, tagList{"smoke", "auth", "nightly"}, l)
}

func firstWords(out string) []string {
	var w []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 2 {
			w = append(w, f[0]+" "+f[1])
		}
	}
	return w
}

// Oracle details and messages come from pages and models: their control
// characters never reach the terminal or the CI log.
func TestSuiteDisplayDropsControlCharacters(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := newSuiteDisplay(&out, false, "")
	evil := "The page says \x1b[2K\x1b]0;pwned\x07hi\u202e\u009b31m there"
	d.update(&wfv1.SuiteRun{Id: "sr-1", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, Results: []*wfv1.TestResult{{
		Test: "t", Outcome: wfv1.TestOutcome_TEST_OUTCOME_FAILED, Message: evil,
		Attempts: []*wfv1.TestAttempt{{Number: 1, RunId: "run-1", Oracles: []*wfv1.OracleResult{{Name: "rubric", Kind: "rubric", Detail: evil}}}},
	}}})
	d.stop()
	require.Equal(t, "✗ t  failed 0.00  run run-1: rubric: The page says [2K]0;pwnedhi31m there\n", out.String())
	require.Equal(t, "FAILED · 0 tests · suite run sr-1 · a b", suiteSummaryLine(&wfv1.SuiteRun{Id: "sr-1", Status: wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, Error: "a\x1b\tb"}))
}
