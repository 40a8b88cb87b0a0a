package suite

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// The JUnit document, in the shape of the JUnit schema of Jenkins' xUnit
// plugin (junit-10.xsd), which CI systems read: one <testsuite> for the
// suite run, one <testcase> per test.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string           `xml:"name,attr"`
		Tests      int              `xml:"tests,attr"`
		Failures   int              `xml:"failures,attr"`
		Errors     int              `xml:"errors,attr"`
		Skipped    int              `xml:"skipped,attr"`
		Time       string           `xml:"time,attr"`
		Timestamp  string           `xml:"timestamp,attr,omitempty"`
		ID         string           `xml:"id,attr,omitempty"`
		Properties *junitProperties `xml:"properties"`
		Cases      []junitCase      `xml:"testcase"`
		SystemErr  *junitText       `xml:"system-err"`
	}
	junitProperties struct {
		Property []junitProperty `xml:"property"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string         `xml:"name,attr"`
		Classname string         `xml:"classname,attr"`
		Time      string         `xml:"time,attr"`
		Failure   *junitOutcome  `xml:"failure"`
		Error     *junitOutcome  `xml:"error"`
		Skipped   *junitOutcome  `xml:"skipped"`
		Flaky     []junitAttempt `xml:"flakyFailure"`
		SystemOut *junitText     `xml:"system-out"`
	}
	junitOutcome struct {
		Message string `xml:"message,attr,omitempty"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",cdata"`
	}
	// junitText is an element's text as CDATA, which keeps line breaks
	// and quotes readable.
	junitText struct {
		Text string `xml:",cdata"`
	}
	// junitAttempt is a failed attempt of a test that passed later
	// (Surefire's flakyFailure, which Jenkins shows as flaky).
	junitAttempt struct {
		Message   string     `xml:"message,attr,omitempty"`
		Type      string     `xml:"type,attr"`
		SystemOut *junitText `xml:"system-out"`
	}
)

// JUnit writes sr as JUnit XML for CI: <testsuites> (name, tests,
// failures, errors, time) holding one <testsuite> named after the suite
// (with skipped, timestamp, the suite run's ID and properties: its ID,
// status, tags and the number of flaky tests), and one <testcase> per test
// (classname the suite, time its duration in seconds): FAILED has a
// <failure> (message: why; text: the failing oracles and the run's error),
// ERROR an <error>, SKIPPED (and a test a cancelled or unfinished run never
// finished) a <skipped>, FLAKY passes with a <flakyFailure> per failed
// attempt. Every test's <system-out> is the evidence of each attempt: run
// ID, status, final URL, final screenshot media ID, steps and each
// oracle's result. Element text is CDATA, attributes are escaped, and
// characters XML cannot hold are dropped. The output is valid against
// Jenkins' junit-10.xsd (which has no skipped count on <testsuites> and no
// <properties> in a <testcase>, hence the flaky marks above).
func JUnit(sr *wfv1.SuiteRun) ([]byte, error) {
	if sr == nil {
		return nil, fmt.Errorf("suite: junit: no suite run")
	}
	suite := junitSuite{
		Name:      xmlText(sr.GetSuite()),
		Tests:     len(sr.GetResults()),
		Time:      seconds(sr.GetStartTime(), sr.GetEndTime()),
		Timestamp: timestamp(firstSet(sr.GetStartTime(), sr.GetCreateTime())),
		ID:        xmlText(sr.GetId()),
		SystemErr: cdata(sr.GetError()),
	}
	flaky := 0
	for _, r := range sr.GetResults() {
		c := junitCase{
			Name:      xmlText(r.GetTest()),
			Classname: suite.Name,
			Time:      seconds(r.GetStartTime(), r.GetEndTime()),
			SystemOut: cdata(evidence(r)),
		}
		switch r.GetOutcome() {
		case wfv1.TestOutcome_TEST_OUTCOME_PASSED:
		case wfv1.TestOutcome_TEST_OUTCOME_FLAKY:
			flaky++
			for _, a := range r.GetAttempts() {
				if !a.GetPassed() {
					c.Flaky = append(c.Flaky, junitAttempt{
						Message:   xmlLine(attemptMessage(a)),
						Type:      "FLAKY",
						SystemOut: cdata(attemptEvidence(a)),
					})
				}
			}
		case wfv1.TestOutcome_TEST_OUTCOME_FAILED:
			suite.Failures++
			c.Failure = &junitOutcome{Message: xmlLine(resultMessage(r)), Type: "FAILED", Text: xmlText(failureText(r))}
		case wfv1.TestOutcome_TEST_OUTCOME_ERROR:
			suite.Errors++
			c.Error = &junitOutcome{Message: xmlLine(resultMessage(r)), Type: "ERROR", Text: xmlText(failureText(r))}
		case wfv1.TestOutcome_TEST_OUTCOME_SKIPPED:
			suite.Skipped++
			c.Skipped = &junitOutcome{Message: xmlLine(r.GetMessage())}
		default:
			suite.Skipped++
			c.Skipped = &junitOutcome{Message: "not finished: the test was " + strings.ToLower(outcomeName(r.GetOutcome())) + " when the report was written"}
		}
		suite.Cases = append(suite.Cases, c)
	}
	props := []junitProperty{
		{Name: "suite_run_id", Value: xmlText(sr.GetId())},
		{Name: "status", Value: strings.TrimPrefix(sr.GetStatus().String(), "SUITE_RUN_STATUS_")},
		{Name: "flaky", Value: strconv.Itoa(flaky)},
	}
	if len(sr.GetTags()) > 0 {
		props = append(props, junitProperty{Name: "tags", Value: xmlText(strings.Join(sr.GetTags(), ","))})
	}
	suite.Properties = &junitProperties{Property: props}
	doc := junitSuites{
		Name:     suite.Name,
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Errors:   suite.Errors,
		Time:     suite.Time,
		Suites:   []junitSuite{suite},
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("suite: junit: %w", err)
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}

// JSONReport writes sr as the JSON report: the SuiteRun message
// (wayfinder.v1.SuiteRun, results and summary included) in protojson's
// form with the proto field names (snake_case), indented by two spaces,
// byte for byte the same for the same message.
func JSONReport(sr *wfv1.SuiteRun) ([]byte, error) {
	if sr == nil {
		return nil, fmt.Errorf("suite: json report: no suite run")
	}
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("suite: json report: %w", err)
	}
	// protojson varies its whitespace on purpose; compacting and indenting
	// with encoding/json makes the bytes stable.
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("suite: json report: %w", err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("suite: json report: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func outcomeName(o wfv1.TestOutcome) string {
	return strings.TrimPrefix(o.String(), "TEST_OUTCOME_")
}

// resultMessage is why a test failed: its message, else its last
// attempt's, else its outcome.
func resultMessage(r *wfv1.TestResult) string {
	if r.GetMessage() != "" {
		return r.GetMessage()
	}
	if n := len(r.GetAttempts()); n > 0 && r.GetAttempts()[n-1].GetMessage() != "" {
		return r.GetAttempts()[n-1].GetMessage()
	}
	return outcomeName(r.GetOutcome())
}

func attemptMessage(a *wfv1.TestAttempt) string {
	if a.GetMessage() != "" {
		return a.GetMessage()
	}
	return fmt.Sprintf("attempt %d failed (score %.2f)", a.GetNumber(), a.GetScore())
}

// failureText is a failed test's account: its message, then the failing
// oracles and the run of its deciding (last) attempt.
func failureText(r *wfv1.TestResult) string {
	var b strings.Builder
	b.WriteString(resultMessage(r) + "\n")
	if n := len(r.GetAttempts()); n > 0 {
		a := r.GetAttempts()[n-1]
		fmt.Fprintf(&b, "Attempt %d of %d: run %s ended %s, score %.2f of %.2f needed", a.GetNumber(), n,
			orNone(a.GetRunId()), statusName(a.GetRunStatus()), a.GetScore(), r.GetPassThreshold())
		if a.GetTimedOut() {
			b.WriteString(", timed out")
		}
		b.WriteString("\n")
		for _, o := range a.GetOracles() {
			if !o.GetPassed() {
				fmt.Fprintf(&b, "  FAIL %s (%s): %s\n", o.GetName(), o.GetKind(), xmlLine(o.GetDetail()))
			}
		}
	}
	return b.String()
}

// evidence is the account of every attempt of a test.
func evidence(r *wfv1.TestResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.GetTest(), outcomeName(r.GetOutcome()))
	if len(r.GetAttempts()) > 0 {
		fmt.Fprintf(&b, " after %d attempt(s), score %.2f (pass threshold %.2f)", len(r.GetAttempts()), r.GetScore(), r.GetPassThreshold())
	}
	b.WriteString("\n")
	if r.GetMessage() != "" {
		b.WriteString(xmlLine(r.GetMessage()) + "\n")
	}
	for _, a := range r.GetAttempts() {
		b.WriteString(attemptEvidence(a))
	}
	return b.String()
}

// attemptEvidence is one attempt's run, evidence and oracle results.
func attemptEvidence(a *wfv1.TestAttempt) string {
	var b strings.Builder
	verdict := "passed"
	if !a.GetPassed() {
		verdict = "failed"
	}
	fmt.Fprintf(&b, "Attempt %d %s (score %.2f", a.GetNumber(), verdict, a.GetScore())
	if a.GetTimedOut() {
		b.WriteString(", timed out")
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  run: %s (%s)\n", orNone(a.GetRunId()), statusName(a.GetRunStatus()))
	fmt.Fprintf(&b, "  final URL: %s\n", orNone(a.GetFinalUrl()))
	fmt.Fprintf(&b, "  final screenshot: %s\n", orNone(a.GetFinalScreenshotMediaId()))
	fmt.Fprintf(&b, "  steps: %d\n", a.GetStepCount())
	if !a.GetPassed() && a.GetMessage() != "" {
		fmt.Fprintf(&b, "  why: %s\n", xmlLine(a.GetMessage()))
	}
	for _, o := range a.GetOracles() {
		mark := "pass"
		if !o.GetPassed() {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %s (%s, score %.2f, weight %g", mark, o.GetName(), o.GetKind(), o.GetScore(), o.GetWeight())
		if o.GetRequired() {
			b.WriteString(", required")
		}
		fmt.Fprintf(&b, "): %s\n", xmlLine(o.GetDetail()))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func firstSet(ts ...*timestamppb.Timestamp) *timestamppb.Timestamp {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// timestamp is the time in UTC, RFC 3339 to the second; "" when unset.
func timestamp(ts *timestamppb.Timestamp) string {
	if ts == nil || ts.CheckValid() != nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// seconds is the time between start and end in seconds with three
// decimals; "0" when either is unset.
func seconds(start, end *timestamppb.Timestamp) string {
	if start == nil || end == nil || start.CheckValid() != nil || end.CheckValid() != nil {
		return "0"
	}
	d := end.AsTime().Sub(start.AsTime())
	if d < 0 {
		return "0"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// xmlText drops what XML 1.0 cannot hold: control characters other than
// tab, newline and carriage return, invalid UTF-8, U+FFFE and U+FFFF.
// encoding/xml escapes the rest.
func xmlText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		keep := r == '\t' || r == '\n' || r == '\r' ||
			(r >= 0x20 && !(r == utf8.RuneError && size == 1) && r != 0xFFFE && r != 0xFFFF)
		if keep {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// cdata is s as element text; nil (no element) when empty.
func cdata(s string) *junitText {
	if s = xmlText(s); s == "" {
		return nil
	}
	return &junitText{Text: s}
}

// xmlLine is xmlText on one line, for attributes.
func xmlLine(s string) string {
	return oneLine(xmlText(s))
}
