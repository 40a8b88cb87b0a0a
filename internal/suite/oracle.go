package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/schema"
)

// Oracle kinds, as OracleKind and OracleResult.kind name them.
const (
	KindGoal           = "goal"
	KindURLPattern     = "url_pattern"
	KindTextPresent    = "text_present"
	KindElementPresent = "element_present"
	KindDataSchema     = "data_schema"
	KindRubric         = "rubric"
)

// Defaults of tests and oracles.
const (
	// DefaultTimeout is an attempt's limit when neither the test nor the
	// suite sets one.
	DefaultTimeout = 5 * time.Minute
	// DefaultPassThreshold is the score a passing attempt needs when the
	// test sets none: every (weighted) oracle passes.
	DefaultPassThreshold = 1.0
	// DefaultPassScore is a rubric oracle's passing grade when it sets
	// none.
	DefaultPassScore = 0.7
)

// epsilon absorbs rounding in the weighted mean, so that every oracle
// passing always reaches a threshold of 1.
const epsilon = 1e-9

// reportKind is the kind of Run.criteria entries of report indicators.
const reportKind = "report"

// maxMessage bounds a Verdict's message; maxDetail one oracle's detail
// in it.
const (
	maxMessage = 2000
	maxDetail  = 300
)

// Evidence is what the oracles judge: an attempt's finished run and what it
// left.
type Evidence struct {
	// Run is the final run: status, final_verdict, final_url, output,
	// criteria, summary, error.
	Run *wfv1.Run
	// Steps are the run's steps, for the rubric's account of what
	// happened.
	Steps []*wfv1.Step
	// Screenshot is the final screenshot (PNG or JPEG), nil when none.
	Screenshot []byte
}

// ModelFor builds the rubric oracle's grading model from its settings (the
// caller resolves defaults: the oracle's model, else the test's judge
// model, else its controller's).
type ModelFor func(ctx context.Context, t *wfv1.Test, o *wfv1.RubricOracle) (llm.Model, error)

// Verdict is an attempt's judgement.
type Verdict struct {
	// Oracles are the oracles' results, in the order of Oracles(t).
	Oracles []*wfv1.OracleResult
	// Score is the weighted mean of the oracles' scores, 0-1 (1 when
	// every weight is 0).
	Score float64
	// Passed: Score reached the test's pass threshold and no required
	// oracle failed.
	Passed bool
	// Message says why the attempt failed: the failing oracles and the
	// run's error. Empty when it passed.
	Message string
}

// Oracles returns t's oracles, or, when it has none, the default: a single
// goal oracle.
func Oracles(t *wfv1.Test) []*wfv1.Oracle {
	if len(t.GetOracles()) > 0 {
		return t.GetOracles()
	}
	return []*wfv1.Oracle{{Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}}
}

// OracleKind names o's check ("goal", "url_pattern", …; the Kind*
// constants), "" when it has none.
func OracleKind(o *wfv1.Oracle) string {
	switch o.GetCheck().(type) {
	case *wfv1.Oracle_Goal:
		return KindGoal
	case *wfv1.Oracle_UrlPattern:
		return KindURLPattern
	case *wfv1.Oracle_TextPresent:
		return KindTextPresent
	case *wfv1.Oracle_ElementPresent:
		return KindElementPresent
	case *wfv1.Oracle_DataSchema:
		return KindDataSchema
	case *wfv1.Oracle_Rubric:
		return KindRubric
	}
	return ""
}

// oracleName is o's name, by default its kind.
func oracleName(o *wfv1.Oracle) string {
	if o.GetName() != "" {
		return o.GetName()
	}
	return OracleKind(o)
}

// maxReportName bounds an indicator's name (the API's limit).
const maxReportName = 200

// ReportName is the name of the report indicator AttemptParams adds for a
// final-page oracle (text_present, element_present): "oracle:" and the
// oracle's name (by default its kind). Oracles of one name are told apart
// by their condition, which the report indicator repeats.
func ReportName(o *wfv1.Oracle) string {
	return clipRunes("oracle:"+oracleName(o), maxReportName)
}

// reportIndicator is the report indicator of a final-page oracle, nil for
// other oracles.
func reportIndicator(o *wfv1.Oracle) *wfv1.Indicator {
	switch c := o.GetCheck().(type) {
	case *wfv1.Oracle_TextPresent:
		return &wfv1.Indicator{Name: ReportName(o), Condition: &wfv1.Indicator_TextPresent{TextPresent: c.TextPresent}}
	case *wfv1.Oracle_ElementPresent:
		return &wfv1.Indicator{Name: ReportName(o), Condition: &wfv1.Indicator_ElementPresent{ElementPresent: c.ElementPresent}}
	}
	return nil
}

// PassThreshold is the score a passing attempt of t needs: its
// pass_threshold, by default DefaultPassThreshold.
func PassThreshold(t *wfv1.Test) float64 {
	if t.PassThreshold != nil {
		return t.GetPassThreshold()
	}
	return DefaultPassThreshold
}

// attemptTimeout is an attempt's limit: the test's timeout, else the
// suite's default_timeout, else DefaultTimeout.
func attemptTimeout(t *wfv1.Test, s *wfv1.Suite) time.Duration {
	for _, d := range []*durationpb.Duration{t.GetTimeout(), s.GetDefaultTimeout()} {
		if d != nil && d.CheckValid() == nil && d.AsDuration() > 0 {
			return d.AsDuration()
		}
	}
	return DefaultTimeout
}

// AttemptParams returns the parameters of one attempt of t in suite s: a
// copy of t's params with a report indicator (ReportName) for each
// text_present and element_present oracle, and browser.run_timeout set to
// t's timeout, else s's default_timeout, else DefaultTimeout. t is not
// changed.
func AttemptParams(t *wfv1.Test, s *wfv1.Suite) *wfv1.RunParams {
	p := &wfv1.RunParams{}
	if t.GetParams() != nil {
		p = proto.Clone(t.GetParams()).(*wfv1.RunParams)
	}
	for _, o := range Oracles(t) {
		ind := reportIndicator(o)
		if ind == nil {
			continue
		}
		if p.Completion == nil {
			p.Completion = &wfv1.CompletionCriteria{}
		}
		if !containsIndicator(p.Completion.Report, ind) {
			p.Completion.Report = append(p.Completion.Report, ind)
		}
	}
	if p.Browser == nil {
		p.Browser = &wfv1.BrowserConfig{}
	}
	p.Browser.RunTimeout = durationpb.New(attemptTimeout(t, s))
	return p
}

func containsIndicator(list []*wfv1.Indicator, ind *wfv1.Indicator) bool {
	for _, have := range list {
		if proto.Equal(have, ind) {
			return true
		}
	}
	return false
}

// Evaluate judges an attempt of t by its evidence with each of Oracles(t)
// and weighs the results: Score = Σ weight·score / Σ weight (weight default
// 1; 1 when every weight is 0), Passed = Score ≥ PassThreshold(t) and no
// required oracle failed. An oracle that cannot decide (an invalid pattern
// or schema, a model that fails or answers nonsense twice) fails with the
// reason as its detail: Evaluate goes on. Its only errors are a missing
// run and ctx's end while a model is asked (the attempt is then undecided,
// not failed). models may be nil when t has no rubric oracle.
func Evaluate(ctx context.Context, t *wfv1.Test, ev Evidence, models ModelFor) (Verdict, error) {
	if ev.Run == nil {
		return Verdict{}, errors.New("suite: evaluate: no run")
	}
	oracles := Oracles(t)
	results := make([]*wfv1.OracleResult, len(oracles))
	for i, o := range oracles {
		r := &wfv1.OracleResult{
			Name:     oracleName(o),
			Kind:     OracleKind(o),
			Weight:   1,
			Required: o.GetRequired(),
		}
		if o.Weight != nil {
			r.Weight = o.GetWeight()
		}
		var passed bool
		switch c := o.GetCheck().(type) {
		case *wfv1.Oracle_Goal:
			passed, r.Detail = checkGoal(c.Goal, ev.Run)
		case *wfv1.Oracle_UrlPattern:
			passed, r.Detail = checkURL(c.UrlPattern, ev.Run)
		case *wfv1.Oracle_TextPresent, *wfv1.Oracle_ElementPresent:
			passed, r.Detail = checkReport(o, ev.Run)
		case *wfv1.Oracle_DataSchema:
			passed, r.Detail = checkSchema(c.DataSchema, ev.Run)
		case *wfv1.Oracle_Rubric:
			g, err := gradeRubric(ctx, t, c.Rubric, ev, models)
			if err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return Verdict{}, ctxErr
				}
				r.Detail = clipRunes("could not grade: "+err.Error(), maxReason)
				break
			}
			r.Score, r.Detail = g.score, g.reason
			passed = g.score >= rubricPassScore(c.Rubric)-epsilon
		default:
			r.Detail = "the oracle has no check"
		}
		r.Passed = passed
		if r.Kind != KindRubric {
			r.Score = 0
			if passed {
				r.Score = 1
			}
		}
		results[i] = r
	}
	return weigh(t, results, ev.Run), nil
}

// weigh combines the results into a Verdict.
func weigh(t *wfv1.Test, results []*wfv1.OracleResult, run *wfv1.Run) Verdict {
	var sum, total float64
	requiredFailed := false
	for _, r := range results {
		sum += r.GetWeight() * r.GetScore()
		total += r.GetWeight()
		if r.GetRequired() && !r.GetPassed() {
			requiredFailed = true
		}
	}
	score := 1.0
	if total > 0 {
		score = min(1, max(0, sum/total))
	}
	threshold := PassThreshold(t)
	v := Verdict{Oracles: results, Score: score, Passed: score >= threshold-epsilon && !requiredFailed}
	if !v.Passed {
		v.Message = failMessage(results, score, threshold, requiredFailed, run)
	}
	return v
}

// failMessage says why an attempt failed.
func failMessage(results []*wfv1.OracleResult, score, threshold float64, requiredFailed bool, run *wfv1.Run) string {
	var parts []string
	if !requiredFailed || score < threshold-epsilon {
		parts = append(parts, fmt.Sprintf("score %.2f is below the pass threshold %.2f", score, threshold))
	}
	for _, r := range results {
		if r.GetPassed() {
			continue
		}
		label := r.GetName()
		if r.GetRequired() {
			label += " (required)"
		}
		parts = append(parts, label+" failed: "+clipRunes(oneLine(r.GetDetail()), maxDetail))
	}
	if e := run.GetError(); e != nil && (e.GetMessage() != "" || e.GetCategory() != wfv1.ErrorCategory_ERROR_CATEGORY_UNSPECIFIED) {
		parts = append(parts, "run error "+errorText(e))
	}
	return clipRunes(strings.Join(parts, "; "), maxMessage)
}

// errorText is "NAVIGATION_TIMEOUT: message".
func errorText(e *wfv1.RunError) string {
	cat := strings.TrimPrefix(e.GetCategory().String(), "ERROR_CATEGORY_")
	if e.GetMessage() == "" {
		return cat
	}
	return cat + ": " + clipRunes(oneLine(e.GetMessage()), maxDetail)
}

func statusName(s wfv1.RunStatus) string {
	return strings.TrimPrefix(s.String(), "RUN_STATUS_")
}

// checkGoal: the run COMPLETED with the judge's confidence at least
// min_confidence.
func checkGoal(g *wfv1.GoalOracle, run *wfv1.Run) (bool, string) {
	if run.GetStatus() != wfv1.RunStatus_RUN_STATUS_COMPLETED {
		detail := "the run ended " + statusName(run.GetStatus())
		switch {
		case run.GetError() != nil:
			detail += " (" + errorText(run.GetError()) + ")"
		case run.GetSummary() != "":
			detail += ": " + clipRunes(oneLine(run.GetSummary()), maxDetail)
		}
		return false, detail
	}
	conf := run.GetFinalVerdict().GetConfidence()
	if conf < g.GetMinConfidence()-epsilon {
		return false, fmt.Sprintf("the run completed, but the judge's confidence %.2f is below %.2f", conf, g.GetMinConfidence())
	}
	if run.GetFinalVerdict() == nil {
		return true, "the run completed"
	}
	return true, fmt.Sprintf("the run completed (confidence %.2f)", conf)
}

// checkURL: the RE2 pattern matches the run's final URL.
func checkURL(pattern string, run *wfv1.Run) (bool, string) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false, "invalid pattern: " + err.Error()
	}
	u := run.GetFinalUrl()
	if u == "" {
		return false, "the run recorded no final URL"
	}
	if re.MatchString(u) {
		return true, fmt.Sprintf("the final URL %q matches %q", clipRunes(u, maxDetail), pattern)
	}
	return false, fmt.Sprintf("the final URL %q does not match %q", clipRunes(u, maxDetail), pattern)
}

// checkReport reads a final-page oracle's report indicator from the run's
// criteria.
func checkReport(o *wfv1.Oracle, run *wfv1.Run) (bool, string) {
	want := reportIndicator(o)
	var res *wfv1.IndicatorResult
	for _, c := range run.GetCriteria() {
		if c.GetKind() == reportKind && proto.Equal(c.GetIndicator(), want) {
			res = c
		}
	}
	what := fmt.Sprintf("the text %q", o.GetTextPresent())
	if OracleKind(o) == KindElementPresent {
		what = fmt.Sprintf("a visible element matching %q", o.GetElementPresent())
	}
	switch {
	case res == nil:
		return false, fmt.Sprintf("the run recorded no result for %s (report indicator %q): it ended before a page was checked", what, want.GetName())
	case res.GetError() != "":
		return false, fmt.Sprintf("could not check for %s: %s", what, clipRunes(oneLine(res.GetError()), maxDetail))
	case res.GetMatched():
		return true, fmt.Sprintf("%s is on the final page (step %d)", upperFirst(what), res.GetStepNumber())
	}
	return false, fmt.Sprintf("%s is not on the final page (step %d)", upperFirst(what), res.GetStepNumber())
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// checkSchema: the run's output satisfies the JSON Schema.
func checkSchema(spec *structpb.Struct, run *wfv1.Run) (bool, string) {
	if run.GetOutput() == nil {
		return false, "the run produced no output"
	}
	raw, err := protojson.Marshal(spec)
	if err != nil {
		return false, "invalid JSON Schema: " + err.Error()
	}
	sch, _, err := schema.Compile(raw, "data_schema")
	if err != nil {
		return false, "invalid JSON Schema: " + err.Error()
	}
	out, err := protojson.Marshal(run.GetOutput())
	if err != nil {
		return false, "unreadable output: " + err.Error()
	}
	doc, err := schema.Parse(out)
	if err != nil {
		return false, "unreadable output: " + err.Error()
	}
	if err := sch.Validate(doc); err != nil {
		return false, fmt.Sprintf("the output does not match the schema: %s (output: %s)",
			schema.Describe(err), clipRunes(compactJSON(out), maxDetail))
	}
	return true, "the output matches the schema"
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// Summarize counts results by outcome (an unspecified outcome counts as
// pending).
func Summarize(results []*wfv1.TestResult) *wfv1.SuiteRunSummary {
	s := &wfv1.SuiteRunSummary{Total: int32(len(results))}
	for _, r := range results {
		switch r.GetOutcome() {
		case wfv1.TestOutcome_TEST_OUTCOME_PASSED:
			s.Passed++
		case wfv1.TestOutcome_TEST_OUTCOME_FAILED:
			s.Failed++
		case wfv1.TestOutcome_TEST_OUTCOME_FLAKY:
			s.Flaky++
		case wfv1.TestOutcome_TEST_OUTCOME_ERROR:
			s.Errored++
		case wfv1.TestOutcome_TEST_OUTCOME_SKIPPED:
			s.Skipped++
		case wfv1.TestOutcome_TEST_OUTCOME_RUNNING:
			s.Running++
		default:
			s.Pending++
		}
	}
	return s
}

// oneLine folds whitespace, newlines included.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clipRunes cuts s to n runes, marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
