package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/schema"
	"github.com/wayfinder/wayfinder/internal/suite"
)

// Limits of tests and suites (test_service.proto).
const (
	maxTestDescriptionLen = 1000
	maxTestTags           = 20
	maxRetries            = 5
	maxOracles            = 20
	maxOracleNameLen      = 100
	maxOracleWeight       = 100
	maxRubricLen          = 10000
	maxSchemaBytes        = 64 << 10
	maxSuiteTests         = 500
	maxSuiteConcurrency   = 64
	maxSuiteRequestIDLen  = 200
	maxSuiteFileBytes     = 1 << 20
)

// ReasonInlineSecret is the google.rpc.ErrorInfo reason (domain
// errorDomain) of an INVALID_ARGUMENT status refusing a test whose run
// parameters hold a secret value instead of a credential's name: tests are
// kept in files and repositories.
const ReasonInlineSecret = "INLINE_SECRET"

var (
	// testNamePattern is the pattern of test, suite and oracle names.
	testNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	tagPattern      = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)
)

// reasonError is a request error whose status also names a reason
// (google.rpc.ErrorInfo), for clients that branch on it.
type reasonError struct {
	*fault.RequestError
	reason string
}

func (e *reasonError) Unwrap() error { return e.RequestError }

// GRPCStatus is the request error's status with the reason added.
func (e *reasonError) GRPCStatus() *status.Status {
	st := status.Convert(toStatus(context.Background(), slog.New(slog.DiscardHandler), "", e.RequestError))
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: e.reason, Domain: errorDomain}); err == nil {
		return d
	}
	return st
}

// hasReason reports whether err is a request error with reason.
func hasReason(err error, reason string) bool {
	var re *reasonError
	return errors.As(err, &re) && re.reason == reason
}

// addViolations adds the violations of err, a request error, to v with
// their fields prefixed; any other error is returned.
func addViolations(v *fault.Violations, prefix string, err error) error {
	var re *fault.RequestError
	if !errors.As(err, &re) {
		return err
	}
	for _, f := range re.Violations {
		if errors.Is(re.Kind, fault.ErrUnimplemented) {
			v.Unimplemented(prefix+f.Field, "%s", f.Description)
		} else {
			v.Add(prefix+f.Field, "%s", f.Description)
		}
	}
	return nil
}

// violationsErr is v's error, carrying reason when set.
func violationsErr(v *fault.Violations, reason string) error {
	err := v.Err()
	var re *fault.RequestError
	if reason != "" && errors.As(err, &re) {
		return &reasonError{RequestError: re, reason: reason}
	}
	return err
}

func validateName(v *fault.Violations, field, name string) {
	if !testNamePattern.MatchString(name) {
		v.Add(field, "must match %s (got %q)", testNamePattern, truncateName(name))
	}
}

func validateTags(v *fault.Violations, field string, tags []string) {
	if len(tags) > maxTestTags {
		v.Add(field, "at most %d tags (got %d)", maxTestTags, len(tags))
		return
	}
	for i, t := range tags {
		if !tagPattern.MatchString(t) {
			v.Add(fmt.Sprintf("%s[%d]", field, i), "must match %s (got %q)", tagPattern, truncateName(t))
		}
	}
}

func validateDescription(v *fault.Violations, field, s string) {
	if utf8.RuneCountInString(s) > maxTestDescriptionLen {
		v.Add(field, "at most %d characters", maxTestDescriptionLen)
	}
}

// suiteRunLabels are the labels a suite run puts on its attempts' runs
// (internal/suiterun).
var suiteRunLabels = []string{suite.LabelSuiteRun, suite.LabelTest}

func validFraction(x float64) bool { return x >= 0 && x <= 1 && !math.IsNaN(x) }

// validateTestFields checks t's own fields but its oracles
// (validateOracles) and its params' contents (checkRunParams).
// maxRunTimeout bounds its timeout.
func validateTestFields(v *fault.Violations, field string, t *wfv1.Test, maxRunTimeout time.Duration) {
	validateName(v, field+".name", t.GetName())
	validateDescription(v, field+".description", t.GetDescription())
	validateTags(v, field+".tags", t.GetTags())
	if p := t.PassThreshold; p != nil && !validFraction(*p) {
		v.Add(field+".pass_threshold", "must be between 0 and 1 (got %g)", *p)
	}
	if r := t.GetRetries(); r < 0 || r > maxRetries {
		v.Add(field+".retries", "must be between 0 and %d (got %d)", maxRetries, r)
	}
	if t.Timeout != nil {
		validateDuration(v, field+".timeout", t.Timeout, 0, min(minRunTimeout, maxRunTimeout), maxRunTimeout)
	}
	switch {
	case t.GetParams() == nil:
		v.Add(field+".params", "the run's parameters are required")
	case t.GetParams().GetBrowser().GetRunTimeout() != nil:
		v.Add(field+".params.browser.run_timeout", "a test's attempt limit is its timeout (default the suite's default_timeout); set timeout instead")
	case len(t.GetParams().GetLabels()) > maxLabels-len(suiteRunLabels):
		v.Add(field+".params.labels", "at most %d labels: a suite run adds %s", maxLabels-len(suiteRunLabels), strings.Join(suiteRunLabels, " and "))
	}
	for _, k := range suiteRunLabels {
		if _, ok := t.GetParams().GetLabels()[k]; ok {
			v.Add(fmt.Sprintf("%s.params.labels[%q]", field, k), "reserved: a suite run sets it on the test's runs")
		}
	}
}

func validateOracles(v *fault.Violations, field string, oracles []*wfv1.Oracle) {
	if len(oracles) > maxOracles {
		v.Add(field, "at most %d oracles (got %d)", maxOracles, len(oracles))
		return
	}
	seen := map[string]int{}
	weights := 0.0
	for i, o := range oracles {
		f := fmt.Sprintf("%s[%d]", field, i)
		validateOracle(v, f, o)
		name := o.GetName()
		if name == "" {
			name = suite.OracleKind(o)
		}
		if j, dup := seen[name]; dup && name != "" {
			v.Add(f+".name", "%q is also the name of oracles[%d]; oracles of one kind need names of their own", name, j)
		}
		seen[name] = i
		weights += oracleWeight(o)
	}
	if len(oracles) > 0 && weights == 0 {
		v.Add(field, "the oracles' weights sum to 0; give at least one a weight")
	}
}

func oracleWeight(o *wfv1.Oracle) float64 {
	if o.Weight == nil {
		return 1
	}
	return o.GetWeight()
}

func validateOracle(v *fault.Violations, field string, o *wfv1.Oracle) {
	if n := o.GetName(); n != "" {
		// A label shown in results and reports: words and spaces are
		// fine; the report indicator's name is "oracle:" + it.
		switch {
		case utf8.RuneCountInString(n) > maxOracleNameLen:
			v.Add(field+".name", "at most %d characters", maxOracleNameLen)
		case strings.TrimSpace(n) != n || strings.IndexFunc(n, unicode.IsControl) >= 0:
			v.Add(field+".name", "no leading or trailing spaces and no control characters")
		}
	}
	if w := o.Weight; w != nil && (*w < 0 || *w > maxOracleWeight || math.IsNaN(*w)) {
		v.Add(field+".weight", "must be between 0 and %d (got %g)", maxOracleWeight, *w)
	}
	switch c := o.GetCheck().(type) {
	case *wfv1.Oracle_Goal:
		if m := c.Goal.GetMinConfidence(); !validFraction(m) {
			v.Add(field+".goal.min_confidence", "must be between 0 and 1 (got %g)", m)
		}
	case *wfv1.Oracle_UrlPattern:
		validateRequiredPattern(v, field+".url_pattern", c.UrlPattern)
	case *wfv1.Oracle_TextPresent:
		validateOracleText(v, field+".text_present", c.TextPresent)
	case *wfv1.Oracle_ElementPresent:
		validateOracleText(v, field+".element_present", c.ElementPresent)
	case *wfv1.Oracle_DataSchema:
		if err := compileDataSchema(c.DataSchema); err != nil {
			v.Add(field+".data_schema", "%v", err)
		}
	case *wfv1.Oracle_Rubric:
		validateRubric(v, field+".rubric", c.Rubric)
	default:
		v.Add(field, "set exactly one check: goal, url_pattern, text_present, element_present, data_schema or rubric")
	}
}

func validateOracleText(v *fault.Violations, field, s string) {
	if strings.TrimSpace(s) == "" {
		v.Add(field, "must not be empty")
		return
	}
	validateRequiredText(v, field, s, maxPatternLen)
}

func validateRubric(v *fault.Violations, field string, r *wfv1.RubricOracle) {
	switch text := r.GetRubric(); {
	case strings.TrimSpace(text) == "":
		v.Add(field+".rubric", "a rubric is required: what a good outcome looks like")
	case utf8.RuneCountInString(text) > maxRubricLen:
		v.Add(field+".rubric", "at most %d characters", maxRubricLen)
	}
	if p := r.GetPassScore(); r.PassScore != nil && !validFraction(p) {
		v.Add(field+".pass_score", "must be between 0 and 1 (got %g)", p)
	}
	if m := r.GetModel(); m != nil {
		if m.Prompt != nil {
			v.Add(field+".model", "the grading model takes no prompt (prompt_text, prompt_ref): the grader's prompt is built in")
		}
		validateModel(v, field+".model", m, false)
	}
}

// compileDataSchema checks that s is a JSON Schema (draft 2020-12) that
// compiles without reading anything outside itself.
func compileDataSchema(s *structpb.Struct) error {
	if s == nil {
		return nil // {}: any output
	}
	raw, err := protojson.Marshal(s)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if len(raw) > maxSchemaBytes {
		return fmt.Errorf("at most %d bytes of JSON", maxSchemaBytes)
	}
	if _, _, err := schema.Compile(raw, "data_schema"); err != nil {
		return fmt.Errorf("not a valid JSON Schema (draft 2020-12): %w", err)
	}
	return nil
}

// secretFields returns the paths ("params.auth.bindings[0].basic.password")
// of the secret values in p, in order: the fields RedactParams redacts.
func secretFields(p *wfv1.RunParams) []string {
	if p == nil {
		return nil
	}
	redacted, found := RedactParams(p)
	if !found {
		return nil
	}
	var out []string
	diffFields(p.ProtoReflect(), redacted.ProtoReflect(), "params", &out)
	slices.Sort(out)
	return out
}

// diffFields appends the paths of the scalar values that differ between a
// and b, messages of one type, to out.
func diffFields(a, b protoreflect.Message, path string, out *[]string) {
	a.Range(func(fd protoreflect.FieldDescriptor, va protoreflect.Value) bool {
		vb := b.Get(fd)
		name := path + "." + string(fd.Name())
		switch {
		case fd.IsList():
			la, lb := va.List(), vb.List()
			for i := range la.Len() {
				elem := fmt.Sprintf("%s[%d]", name, i)
				if fd.Message() != nil {
					diffFields(la.Get(i).Message(), lb.Get(i).Message(), elem, out)
				} else if !la.Get(i).Equal(lb.Get(i)) {
					*out = append(*out, elem)
				}
			}
		case fd.IsMap():
			mb := vb.Map()
			va.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				elem := fmt.Sprintf("%s[%q]", name, k.String())
				if fd.MapValue().Message() != nil {
					diffFields(v.Message(), mb.Get(k).Message(), elem, out)
				} else if !v.Equal(mb.Get(k)) {
					*out = append(*out, elem)
				}
				return true
			})
		case fd.Message() != nil:
			diffFields(va.Message(), vb.Message(), name, out)
		default:
			if !va.Equal(vb) {
				*out = append(*out, name)
			}
		}
		return true
	})
}

// validateSuite checks su's own fields; that its tests exist is checked
// when it is stored. maxRunTimeout bounds its default_timeout.
func validateSuite(v *fault.Violations, field string, su *wfv1.Suite, maxRunTimeout time.Duration) {
	if su == nil {
		v.Add(field, "required")
		return
	}
	validateName(v, field+".name", su.GetName())
	validateDescription(v, field+".description", su.GetDescription())
	validateTags(v, field+".tags", su.GetTags())
	switch n := len(su.GetTests()); {
	case n == 0:
		v.Add(field+".tests", "a suite lists at least one test")
	case n > maxSuiteTests:
		v.Add(field+".tests", "at most %d tests (got %d)", maxSuiteTests, n)
	default:
		seen := map[string]int{}
		for i, name := range su.GetTests() {
			f := fmt.Sprintf("%s.tests[%d]", field, i)
			validateName(v, f, name)
			if j, dup := seen[name]; dup {
				v.Add(f, "test %q is listed twice (also tests[%d])", name, j)
			}
			seen[name] = i
		}
	}
	if c := su.GetConcurrency(); c < 0 || c > maxSuiteConcurrency {
		v.Add(field+".concurrency", "must be between 1 and %d, or 0 for the default 4 (got %d)", maxSuiteConcurrency, c)
	}
	if su.DefaultTimeout != nil {
		validateDuration(v, field+".default_timeout", su.DefaultTimeout, 0, min(minRunTimeout, maxRunTimeout), maxRunTimeout)
	}
}
