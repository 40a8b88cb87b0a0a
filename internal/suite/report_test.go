package suite

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// validateJUnit checks doc against the JUnit schema with xmllint.
func validateJUnit(t *testing.T, doc []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint not found: install libxml2-utils (make deps does)")
	}
	out := filepath.Join(t.TempDir(), "out.xml")
	require.NoError(t, os.WriteFile(out, doc, 0o600))
	res, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", out).CombinedOutput()
	require.NoError(t, err, "xmllint: %s\n%s", res, doc)
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func at(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

func attempt(n int32, passed bool, msg string) *wfv1.TestAttempt {
	a := &wfv1.TestAttempt{
		Number: n, RunId: "run-" + string(rune('0'+n)), Passed: passed, RunStatus: wfv1.RunStatus_RUN_STATUS_COMPLETED,
		FinalUrl: "https://app.example.com/dashboard", FinalScreenshotMediaId: "media-" + string(rune('0'+n)), StepCount: 7,
		StartTime: at(time.Duration(n) * time.Minute), EndTime: at(time.Duration(n)*time.Minute + 30*time.Second),
		Oracles: []*wfv1.OracleResult{{Name: "goal", Kind: "goal", Passed: true, Score: 1, Weight: 1, Detail: "the run completed"}},
		Score:   1,
	}
	if !passed {
		a.Score, a.Message = 0.5, msg
		a.Oracles = append(a.Oracles, &wfv1.OracleResult{Name: "greeting", Kind: "text_present", Weight: 1, Required: true,
			Detail: `The text "Welcome back" is not on the final page (step 7)`})
	}
	return a
}

func result(name string, outcome wfv1.TestOutcome, attempts ...*wfv1.TestAttempt) *wfv1.TestResult {
	r := &wfv1.TestResult{Test: name, Outcome: outcome, Attempts: attempts, PassThreshold: 1, StartTime: at(0), EndTime: at(4*time.Second + 250*time.Millisecond)}
	if n := len(attempts); n > 0 {
		r.Score = attempts[n-1].GetScore()
		r.Message = attempts[n-1].GetMessage()
	}
	return r
}

func suiteRun(status wfv1.SuiteRunStatus, results ...*wfv1.TestResult) *wfv1.SuiteRun {
	return &wfv1.SuiteRun{
		Id: "0b7e6c2a-1111-4222-8333-444455556666", Suite: "checkout", Status: status,
		CreateTime: at(-time.Second), StartTime: at(0), EndTime: at(12*time.Second + 345*time.Millisecond),
		Results: results, Summary: Summarize(results), Tags: []string{"smoke", "nightly"},
	}
}

const failMsg = "score 0.50 is below the pass threshold 1.00; greeting (required) failed: The text \"Welcome back\" is not on the final page (step 7)"

func TestJUnitShapes(t *testing.T) {
	t.Parallel()
	passed := func(name string) *wfv1.TestResult {
		return result(name, wfv1.TestOutcome_TEST_OUTCOME_PASSED, attempt(1, true, ""))
	}
	failed := result("login", wfv1.TestOutcome_TEST_OUTCOME_FAILED, attempt(1, false, failMsg), attempt(2, false, failMsg))
	errored := &wfv1.TestResult{Test: "search", Outcome: wfv1.TestOutcome_TEST_OUTCOME_ERROR, Message: `the run was refused: credential "demo" not found`}
	skipped := &wfv1.TestResult{Test: "export", Outcome: wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, Message: "the suite run was cancelled"}
	flaky := result("cart", wfv1.TestOutcome_TEST_OUTCOME_FLAKY, attempt(1, false, failMsg), attempt(2, true, ""))
	flaky.Message = ""

	for _, tc := range []struct {
		name                                string
		sr                                  *wfv1.SuiteRun
		tests, failures, errors, skippedNum int
		contains                            []string
	}{
		{"all pass", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, passed("a"), passed("b")), 2, 0, 0, 0,
			[]string{`<testsuites name="checkout" tests="2" failures="0" errors="0" time="12.345">`,
				`<testsuite name="checkout" tests="2" failures="0" errors="0" skipped="0" time="12.345" timestamp="2026-03-04T05:06:07Z" id="0b7e6c2a-1111-4222-8333-444455556666">`,
				`<property name="status" value="PASSED"></property>`, `<property name="tags" value="smoke,nightly"></property>`,
				`<testcase name="a" classname="checkout" time="4.250">`, "run: run-1 (COMPLETED)", "final screenshot: media-1",
				"final URL: https://app.example.com/dashboard"}},
		{"failures", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, passed("a"), failed), 2, 1, 0, 0,
			[]string{`<failure message="score 0.50 is below the pass threshold 1.00; greeting (required) failed: The text &#34;Welcome back&#34; is not on the final page (step 7)" type="FAILED">`,
				"Attempt 2 of 2: run run-2 ended COMPLETED, score 0.50 of 1.00 needed",
				`FAIL greeting (text_present): The text "Welcome back" is not on the final page (step 7)`,
				"Attempt 1 failed (score 0.50)", "run: run-1 (COMPLETED)", "run: run-2 (COMPLETED)", "final screenshot: media-2"}},
		{"errors", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, errored, passed("a")), 2, 0, 1, 0,
			[]string{`<error message="the run was refused: credential &#34;demo&#34; not found" type="ERROR">`, `errors="1"`}},
		{"skipped", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, passed("a"), skipped), 2, 0, 0, 1,
			[]string{`<skipped message="the suite run was cancelled"></skipped>`, `skipped="1"`, `value="CANCELLED"`}},
		{"flaky", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, flaky), 1, 0, 0, 0,
			[]string{`<flakyFailure message="score 0.50 is below`, `type="FLAKY">`, `<property name="flaky" value="1"></property>`,
				"cart: FLAKY after 2 attempt(s)", "Attempt 1 failed", "Attempt 2 passed"}},
		{"unfinished", suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING,
			&wfv1.TestResult{Test: "p", Outcome: wfv1.TestOutcome_TEST_OUTCOME_PENDING},
			&wfv1.TestResult{Test: "r", Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING, StartTime: at(0)}), 2, 0, 0, 2,
			[]string{"not finished: the test was pending", "not finished: the test was running", `<testcase name="r" classname="checkout" time="0">`}},
		{"suite error, no tests", func() *wfv1.SuiteRun {
			sr := suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR)
			sr.Error, sr.EndTime, sr.Tags = "the suite's tests could not be read", nil, nil
			return sr
		}(), 0, 0, 0, 0, []string{`tests="0"`, `time="0"`, "<system-err><![CDATA[the suite's tests could not be read]]></system-err>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := JUnit(tc.sr)
			require.NoError(t, err)
			validateJUnit(t, doc)
			text := string(doc)
			require.True(t, strings.HasPrefix(text, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<testsuites "), text)
			for _, s := range tc.contains {
				require.Contains(t, text, s)
			}

			var got struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Errors   int `xml:"errors,attr"`
				Suite    struct {
					Skipped int `xml:"skipped,attr"`
					Cases   []struct {
						Name    string    `xml:"name,attr"`
						Failure *struct{} `xml:"failure"`
						Error   *struct{} `xml:"error"`
						Skipped *struct{} `xml:"skipped"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			require.NoError(t, xml.Unmarshal(doc, &got))
			require.Equal(t, tc.tests, got.Tests)
			require.Equal(t, tc.failures, got.Failures)
			require.Equal(t, tc.errors, got.Errors)
			require.Equal(t, tc.skippedNum, got.Suite.Skipped)
			require.Len(t, got.Suite.Cases, tc.tests)
			for i, c := range got.Suite.Cases {
				r := tc.sr.GetResults()[i]
				require.Equal(t, r.GetTest(), c.Name)
				require.Equal(t, r.GetOutcome() == wfv1.TestOutcome_TEST_OUTCOME_FAILED, c.Failure != nil, c.Name)
				require.Equal(t, r.GetOutcome() == wfv1.TestOutcome_TEST_OUTCOME_ERROR, c.Error != nil, c.Name)
				switch r.GetOutcome() {
				case wfv1.TestOutcome_TEST_OUTCOME_PASSED, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, wfv1.TestOutcome_TEST_OUTCOME_FAILED, wfv1.TestOutcome_TEST_OUTCOME_ERROR:
					require.Nil(t, c.Skipped, c.Name)
				default:
					require.NotNil(t, c.Skipped, c.Name)
				}
			}
		})
	}
}

func TestJUnitEscaping(t *testing.T) {
	t.Parallel()
	nasty := "a <b> & \"c\" 'd' ]]> \x00\x01\x08\x0b\x0c\x1b[31m\x7f \xff\xfe ünï ✓ \uFFFE\uFFFF tab\tnl\ncr\r end"
	a := attempt(1, false, nasty)
	a.FinalUrl = "https://x.example/?q=<script>&a=1"
	a.Oracles[1].Detail = nasty
	r := result("weird <name> & \"quotes\"\x01", wfv1.TestOutcome_TEST_OUTCOME_FAILED, a)
	sr := suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, r,
		&wfv1.TestResult{Test: "e", Outcome: wfv1.TestOutcome_TEST_OUTCOME_ERROR, Message: nasty},
		&wfv1.TestResult{Test: "s", Outcome: wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, Message: nasty})
	sr.Suite = "suite & <co>"
	sr.Error = nasty
	sr.Tags = []string{"a&b"}
	doc, err := JUnit(sr)
	require.NoError(t, err)
	validateJUnit(t, doc)
	require.NotContains(t, string(doc), "\x01")
	require.NotContains(t, string(doc), "\x1b")

	var got struct {
		Name  string `xml:"name,attr"`
		Suite struct {
			SystemErr string `xml:"system-err"`
			Cases     []struct {
				Name    string `xml:"name,attr"`
				Failure struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(doc, &got))
	require.Equal(t, "suite & <co>", got.Name)
	require.Equal(t, `weird <name> & "quotes"`, got.Suite.Cases[0].Name)
	clean := "a <b> & \"c\" 'd' ]]> [31m\x7f  ünï ✓  tab\tnl\ncr\n end" // XML reads a \r in CDATA as \n
	require.Equal(t, clean, got.Suite.SystemErr)
	require.Equal(t, oneLine(clean), got.Suite.Cases[0].Failure.Message)
	require.Contains(t, got.Suite.Cases[0].SystemOut, "final URL: https://x.example/?q=<script>&a=1")
	require.Contains(t, got.Suite.Cases[0].Failure.Text, oneLine(clean))
}

func TestJUnitSchemaRejects(t *testing.T) {
	t.Parallel()
	// The check has teeth: a document outside the schema fails it.
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint not found: install libxml2-utils (make deps does)")
	}
	bad := filepath.Join(t.TempDir(), "bad.xml")
	require.NoError(t, os.WriteFile(bad, []byte(`<testsuites><testsuite name="s"><testcase/></testsuite></testsuites>`), 0o600))
	out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", bad).CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "fails to validate")
}

func TestJUnitNil(t *testing.T) {
	t.Parallel()
	_, err := JUnit(nil)
	require.Error(t, err)
	_, err = JSONReport(nil)
	require.Error(t, err)
}

func TestJSONReport(t *testing.T) {
	t.Parallel()
	sr := suiteRun(wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED,
		result("login", wfv1.TestOutcome_TEST_OUTCOME_FAILED, attempt(1, false, failMsg)),
		result("cart", wfv1.TestOutcome_TEST_OUTCOME_FLAKY, attempt(1, false, failMsg), attempt(2, true, "")))
	sr.TenantId = "tenant-1"
	first, err := JSONReport(sr)
	require.NoError(t, err)
	for range 20 {
		again, err := JSONReport(proto.Clone(sr).(*wfv1.SuiteRun))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again), "stable bytes")
	}
	text := string(first)
	require.True(t, strings.HasPrefix(text, "{\n  \"id\": \"0b7e6c2a-1111-4222-8333-444455556666\",\n  \"suite\": \"checkout\",\n  \"status\": \"SUITE_RUN_STATUS_FAILED\",\n"), text)
	require.True(t, strings.HasSuffix(text, "}\n"))
	for _, key := range []string{`"create_time": "2026-03-04T05:06:06Z"`, `"run_id": "run-1"`, `"pass_threshold": 1`, `"final_screenshot_media_id": "media-1"`,
		`"summary": {`, `"flaky": 1`, `"outcome": "TEST_OUTCOME_FLAKY"`} {
		require.Contains(t, text, key)
	}
	require.NotContains(t, text, "runId")

	var back wfv1.SuiteRun
	require.NoError(t, protojson.Unmarshal(first, &back))
	require.True(t, proto.Equal(sr, &back))
}
