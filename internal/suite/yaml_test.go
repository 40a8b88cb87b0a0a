package suite

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/google/go-cmp/cmp"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// richSuite covers every oracle kind, auth with credential references,
// durations, optional fields set to zero, enums, maps, structs and
// awkward strings.
func richSuite(t *testing.T) (*wfv1.Suite, []*wfv1.Test) {
	t.Helper()
	schema, err := structpb.NewStruct(map[string]any{
		"type":     "object",
		"required": []any{"total", "items"},
		"properties": map[string]any{
			"total": map[string]any{"type": "number", "minimum": 0, "maximum": 1e21, "multipleOf": 0.01},
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 3},
			"note":  map[string]any{"type": []any{"string", "null"}, "default": nil, "deprecated": true},
		},
		"additionalProperties": false,
	})
	require.NoError(t, err)
	temp := 0.0
	login := &wfv1.Test{
		Name:          "login",
		Description:   "Logs in\nthen checks the dashboard.\n",
		Tags:          []string{"auth", "smoke"},
		Retries:       2,
		Timeout:       durationpb.New(90 * time.Second),
		PassThreshold: proto.Float64(0),
		Params: &wfv1.RunParams{
			Goal:           "Log in as \"demo\": then open: the #dashboard",
			StartUrl:       "https://app.example.com/login?next=%2Fhome&x=1",
			Headless:       proto.Bool(false),
			AllowedDomains: []string{"app.example.com", "*.example.com"},
			BlockedDomains: []string{"ads.example.com"},
			MaxSteps:       40,
			Controller:     &wfv1.ModelSettings{Provider: "openai", Model: "gpt-4.1", Temperature: &temp, ApiKeyCredential: "openai-key"},
			Judge: &wfv1.JudgeSettings{
				Strategy:  wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM,
				Frequency: &wfv1.JudgeFrequency{Frequency: &wfv1.JudgeFrequency_EveryStep{EveryStep: false}},
				Model:     &wfv1.ModelSettings{Provider: "anthropic", Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "strict-judge@3"}},
			},
			Auth: &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{
				{Domains: []string{"app.example.com"}, Credential: "demo-user"},
				{Domains: []string{"api.example.com"}, Method: &wfv1.DomainAuthBinding_Basic{Basic: &wfv1.BasicAuth{
					Username: "demo", Strategy: wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_FORM_LOGIN}}, Credential: "api-user"},
				{Domains: []string{"*"}, Method: &wfv1.DomainAuthBinding_Cookie{Cookie: &wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{
					Name: "consent", Domain: ".example.com", Path: "/", Secure: true,
					Expires: timestamppb.New(time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC))}}}}},
			}},
			Browser: &wfv1.BrowserConfig{
				Viewport:          &wfv1.Viewport{Width: 1024, Height: 768},
				Locale:            "de-DE",
				NavigationTimeout: &durationpb.Duration{Seconds: 1, Nanos: 500_000_000},
				ActionTimeout:     &durationpb.Duration{Nanos: 250_000},
				RunTimeout:        durationpb.New(2*time.Hour + 3*time.Minute + 4*time.Second),
			},
			Labels:        map[string]string{"team": "checkout", "env": "staging", "yes": "no"},
			MaxCostUsd:    0.25,
			MaxTokens:     9_007_199_254_740_993, // not a float64
			MinConfidence: proto.Float64(0),
			Governance:    &wfv1.GovernanceConfig{Consent: wfv1.ConsentPolicy_CONSENT_POLICY_REJECT},
			Completion: &wfv1.CompletionCriteria{Failure: []*wfv1.Indicator{
				{Name: "error page", Condition: &wfv1.Indicator_TextPresent{TextPresent: "Something went wrong"}}}},
			Approval: &wfv1.ApprovalSettings{Timeout: &durationpb.Duration{Seconds: 315_576_000_000}}, // beyond time.Duration
			Tools:    []*wfv1.ToolDefinition{{Name: "lookup", Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "crm-lookup"}}},
		},
		Oracles: []*wfv1.Oracle{
			{Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}},
			{Name: "confident", Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{MinConfidence: 0.85}}, Weight: proto.Float64(0)},
			{Name: "url", Check: &wfv1.Oracle_UrlPattern{UrlPattern: `^https://app\.example\.com/dashboard(\?.*)?$`}, Required: true},
			{Name: "greeting", Check: &wfv1.Oracle_TextPresent{TextPresent: "Welcome back, \"Demo\" — 100%"}, Weight: proto.Float64(2.5)},
			{Check: &wfv1.Oracle_ElementPresent{ElementPresent: "nav .avatar[alt='me']"}},
			{Name: "data", Check: &wfv1.Oracle_DataSchema{DataSchema: schema}},
			{Name: "empty", Check: &wfv1.Oracle_UrlPattern{UrlPattern: ""}},
			{Name: "graded", Check: &wfv1.Oracle_Rubric{Rubric: &wfv1.RubricOracle{
				Rubric: "The dashboard greets the user by name.\n- no error banner\n", PassScore: proto.Float64(0.75),
				Model: &wfv1.ModelSettings{Provider: "gemini", Model: "gemini-2.5-pro", MaxOutputTokens: 512}}}},
		},
	}
	odd := &wfv1.Test{
		Name:        "odd-strings",
		Description: "  leading spaces, a tab\tand trailing space ",
		Tags:        []string{"true", "123", "null", "~", "1e3", "0x1F", "2026-01-02"},
		Params: &wfv1.RunParams{
			Goal:     "yes",
			StartUrl: "http://127.0.0.1:8080/",
			Labels:   map[string]string{"empty": "", "colon": "a: b", "hash": "# not a comment", "quote": "'\""},
		},
		Oracles: []*wfv1.Oracle{
			{Check: &wfv1.Oracle_TextPresent{TextPresent: "ünïcödé ✓ 日本語"}},
			{Check: &wfv1.Oracle_ElementPresent{ElementPresent: "- [x]: {a}"}},
			{Name: "ctl", Check: &wfv1.Oracle_TextPresent{TextPresent: "bell\a and\r\nCRLF"}},
		},
	}
	minimal := &wfv1.Test{Name: "minimal"}
	emptyParams := &wfv1.Test{Name: "empty-params", Params: &wfv1.RunParams{Browser: &wfv1.BrowserConfig{}}, Timeout: durationpb.New(0)}
	tests := []*wfv1.Test{login, odd, minimal, emptyParams}
	s := &wfv1.Suite{
		Name:           "checkout",
		Description:    "Checkout: smoke tests",
		Tests:          []string{"login", "odd-strings", "minimal", "empty-params"},
		Tags:           []string{"smoke", "nightly"},
		Concurrency:    3,
		DefaultTimeout: durationpb.New(5 * time.Minute),
	}
	return s, tests
}

func requireEqualFile(t *testing.T, wantS, gotS *wfv1.Suite, wantT, gotT []*wfv1.Test) {
	t.Helper()
	if d := cmp.Diff(wantS, gotS, protocmp.Transform()); d != "" {
		t.Fatalf("suite differs (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantT, gotT, protocmp.Transform()); d != "" {
		t.Fatalf("tests differ (-want +got):\n%s", d)
	}
}

func TestMarshalFileRoundTrip(t *testing.T) {
	t.Parallel()
	s, tests := richSuite(t)
	out, err := MarshalFile(s, tests)
	require.NoError(t, err)
	gotS, gotT, err := ParseFile(out)
	require.NoError(t, err, "file:\n%s", out)
	requireEqualFile(t, s, gotS, tests, gotT)
	require.True(t, proto.Equal(s, gotS))
	for i := range tests {
		require.True(t, proto.Equal(tests[i], gotT[i]), tests[i].GetName())
	}

	// Stable: writing what was read gives the same bytes.
	again, err := MarshalFile(gotS, gotT)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again))

	// Readable: the keys come in the documented order, durations as Go
	// durations, no output-only fields.
	text := string(out)
	require.True(t, strings.HasPrefix(text, "suite: checkout\ndescription: 'Checkout: smoke tests'\nconcurrency: 3\ndefault_timeout: 5m\ntags: [smoke, nightly]\ntests:\n"), text)
	order := []string{"  - name: login", "    description:", "    tags:", "    retries: 2", "    timeout: 1m30s", "    pass_threshold: 0", "    run:", "    oracles:"}
	last := -1
	for _, key := range order {
		i := strings.Index(text, key)
		require.Greater(t, i, last, "%q out of order in\n%s", key, text)
		last = i
	}
	require.Contains(t, text, "run_timeout: 2h3m4s")
	require.Contains(t, text, "navigation_timeout: 1.5s")
	require.Contains(t, text, "action_timeout: 0.00025s")
	require.Contains(t, text, "timeout: 315576000000s")
	require.Contains(t, text, "- goal: {}")
	require.Contains(t, text, "credential: demo-user")
	require.NotContains(t, text, "create_time")
}

func TestMarshalFileOutputOnlyFieldsLeftOut(t *testing.T) {
	t.Parallel()
	s, tests := richSuite(t)
	s.CreateTime, s.UpdateTime = timestamppb.Now(), timestamppb.Now()
	tests[0].CreateTime = timestamppb.Now()
	out, err := MarshalFile(s, tests)
	require.NoError(t, err)
	require.NotContains(t, string(out), "create_time")
	require.NotContains(t, string(out), "update_time")
	_, _, err = ParseFile(out)
	require.NoError(t, err)
}

func TestMarshalFileRefuses(t *testing.T) {
	t.Parallel()
	one := []*wfv1.Test{{Name: "a"}}
	for _, tc := range []struct {
		name  string
		s     *wfv1.Suite
		tests []*wfv1.Test
		want  string
	}{
		{"nil suite", nil, one, "no name"},
		{"no suite name", &wfv1.Suite{}, one, "no name"},
		{"no tests", &wfv1.Suite{Name: "s"}, nil, "at least one test"},
		{"test without name", &wfv1.Suite{Name: "s"}, []*wfv1.Test{{Name: "a"}, {}}, "test 1 has no name"},
		{"duplicate test", &wfv1.Suite{Name: "s"}, []*wfv1.Test{{Name: "a"}, {Name: "a"}}, `two tests are named "a"`},
		{"suite lists others", &wfv1.Suite{Name: "s", Tests: []string{"b"}}, one, "the suite lists"},
		{"invalid utf-8", &wfv1.Suite{Name: "s"}, []*wfv1.Test{{Name: "a", Description: "\xff"}}, "invalid UTF-8"},
		{"invalid duration", &wfv1.Suite{Name: "s", DefaultTimeout: &durationpb.Duration{Seconds: 1, Nanos: -1}}, one, "default_timeout"},
		{"NaN in a struct", &wfv1.Suite{Name: "s"}, []*wfv1.Test{{Name: "a", Oracles: []*wfv1.Oracle{{Check: &wfv1.Oracle_DataSchema{
			DataSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewNumberValue(math.NaN())}}}}}}}, "not a JSON number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MarshalFile(tc.s, tc.tests)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseFileExample(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/example.yaml")
	require.NoError(t, err)
	s, tests, err := ParseFile(data)
	require.NoError(t, err)
	require.Equal(t, "checkout", s.GetName())
	require.Equal(t, []string{"login", "order-total"}, s.GetTests())
	require.Equal(t, 2*time.Minute, s.GetDefaultTimeout().AsDuration())
	login := tests[0]
	require.Equal(t, 90*time.Second, login.GetTimeout().AsDuration())
	require.InDelta(t, 0.8, login.GetPassThreshold(), 1e-12)
	require.Equal(t, "demo-user", login.GetParams().GetAuth().GetBindings()[0].GetCredential())
	require.Len(t, login.GetOracles(), 4)
	require.True(t, login.GetOracles()[2].GetRequired())
	require.InDelta(t, 2, login.GetOracles()[2].GetWeight(), 0)
	order := tests[1]
	require.Equal(t, wfv1.JudgeStrategy_JUDGE_STRATEGY_HYBRID, order.GetParams().GetJudge().GetStrategy())
	require.Equal(t, []string{"shop.example.com", "*.shop.example.com"}, order.GetParams().GetAllowedDomains())
	require.Equal(t, "object", order.GetOracles()[0].GetDataSchema().GetFields()["type"].GetStringValue())
	require.InDelta(t, 0.8, order.GetOracles()[1].GetRubric().GetPassScore(), 1e-12)

	out, err := MarshalFile(s, tests)
	require.NoError(t, err)
	s2, tests2, err := ParseFile(out)
	require.NoError(t, err)
	requireEqualFile(t, s, s2, tests, tests2)
}

func TestParseFileForms(t *testing.T) {
	t.Parallel()
	const file = `
base: &base
  start_url: https://app.example.com/
  allowed_domains: [app.example.com]
suite: forms
tests:
  - name: merged
    timeout: 120s
    run:
      <<: *base
      goal: From the merge
      max_steps: 0x10
      min_confidence: 1
      labels: {n: 404, b: true}
    oracles:
      - text_present: 404
      - url_pattern: ~
        goal: {}
      - data_schema: {const: 2026-01-02, big: 1e3, yes: yes}
  - name: alias
    timeout: "1.5s"
    run: *base
    oracles:
      - goal: {}
`
	// "base" is not a key of a suite file: the anchor must live elsewhere.
	_, _, err := ParseFile([]byte(file))
	require.ErrorContains(t, err, `line 2: unknown field "base"`)

	fixed := strings.Replace(file, "base: &base\n  start_url: https://app.example.com/\n  allowed_domains: [app.example.com]\n", "", 1)
	fixed = strings.Replace(fixed, "    run:\n      <<: *base\n", "    run:\n      <<: &base {start_url: \"https://app.example.com/\", allowed_domains: [app.example.com]}\n", 1)
	s, tests, err := ParseFile([]byte(fixed))
	require.NoError(t, err)
	require.Equal(t, []string{"merged", "alias"}, s.GetTests())
	m := tests[0]
	require.Equal(t, 2*time.Minute, m.GetTimeout().AsDuration())
	require.Equal(t, "From the merge", m.GetParams().GetGoal())
	require.Equal(t, "https://app.example.com/", m.GetParams().GetStartUrl())
	require.Equal(t, int32(16), m.GetParams().GetMaxSteps())
	require.InDelta(t, 1, m.GetParams().GetMinConfidence(), 0)
	require.Equal(t, map[string]string{"n": "404", "b": "true"}, m.GetParams().GetLabels())
	require.Equal(t, "404", m.GetOracles()[0].GetTextPresent())
	require.NotNil(t, m.GetOracles()[1].GetGoal(), "a null url_pattern is unset")
	ds := m.GetOracles()[2].GetDataSchema().GetFields()
	require.Equal(t, "2026-01-02", ds["const"].GetStringValue())
	require.InDelta(t, 1000, ds["big"].GetNumberValue(), 0)
	require.Equal(t, "yes", ds["yes"].GetStringValue())
	a := tests[1]
	require.Equal(t, 1500*time.Millisecond, a.GetTimeout().AsDuration())
	require.Equal(t, "https://app.example.com/", a.GetParams().GetStartUrl())
	require.Empty(t, a.GetParams().GetGoal())
}

func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	const head = "suite: s\ntests:\n"
	for _, tc := range []struct {
		name string
		yaml string
		want string
	}{
		{"empty", "", "the file is empty"},
		{"only comments", "# nothing\n", "the file is empty"},
		{"null document", "---\n~\n", "the file is empty"},
		{"not a mapping", "- a\n- b\n", "line 1: a suite file is a mapping"},
		{"syntax", "suite: s\ntests: [\n", "invalid YAML"},
		{"syntax line", "suite: s\n  bad: indent\n", "line 2: invalid YAML"},
		{"tabs", "suite: s\ntests:\n\t- name: a\n", "invalid YAML"},
		{"two documents", "suite: s\ntests: [{name: a}]\n---\nsuite: t\n", "a second YAML document"},
		{"unknown top key", "suite: s\nname: x\ntests: [{name: a}]\n", `line 2: unknown field "name"`},
		{"missing suite", "tests: [{name: a}]\n", "line 1: suite: missing"},
		{"empty suite name", "suite: ''\ntests: [{name: a}]\n", "line 1: suite: must not be empty"},
		{"missing tests", "suite: s\n", "line 1: tests: missing"},
		{"tests not a list", "suite: s\ntests: {name: a}\n", "line 2: tests: expected a list of tests, got a mapping"},
		{"no tests", "suite: s\ntests: []\n", "line 2: tests: a suite needs at least one test"},
		{"test not a mapping", head + "  - a\n", "line 3: tests[0]: a test is a mapping"},
		{"test without name", head + "  - description: x\n", "line 3: tests[0].name: missing"},
		{"test empty name", head + "  - name: \"\"\n", "line 3: tests[0].name: must not be empty"},
		{"duplicate test", head + "  - name: a\n  - name: b\n  - name: a\n", `line 5: tests[2].name: duplicate test name "a" (also tests[0])`},
		{"duplicate key", head + "  - name: a\n    name: b\n", `line 4: tests[0]: duplicate key "name"`},
		{"unknown test key", head + "  - name: a\n    retry: 1\n", `line 4: tests[0]: unknown field "retry"`},
		{"run param at test level", head + "  - name: a\n    goal: x\n", `"goal" is a run parameter: put it under "run"`},
		{"params instead of run", head + "  - name: a\n    params: {}\n", `the run parameters go under "run"`},
		{"unknown oracle field", head + "  - name: a\n    oracles:\n      - goal: {}\n      - txt_present: Welcome\n",
			`line 6: tests[0].oracles[1]: unknown field "txt_present"`},
		{"oracle without check", head + "  - name: a\n    oracles:\n      - name: x\n        weight: 2\n", "line 5: tests[0].oracles[0]: no check: set one of goal"},
		{"oracle two checks", head + "  - name: a\n    oracles:\n      - goal: {}\n        url_pattern: x\n",
			`line 6: tests[0].oracles[0]: "goal" and "url_pattern" are both set`},
		{"oracles not a list", head + "  - name: a\n    oracles: {goal: {}}\n", "line 4: tests[0].oracles: expected a list of oracles"},
		{"camelCase", head + "  - name: a\n    run:\n      startUrl: x\n", `line 5: tests[0].run: unknown field "startUrl" (did you mean "start_url"?)`},
		{"unknown nested", head + "  - name: a\n    run:\n      auth:\n        bindings:\n          - domains: [x]\n            password: p\n",
			`line 8: tests[0].run.auth.bindings[0]: unknown field "password"`},
		{"retries not a number", head + "  - name: a\n    retries: many\n", `line 4: tests[0].retries: expected a whole number, got a string ("many")`},
		{"retries a fraction", head + "  - name: a\n    retries: 1.5\n", "expected a whole number, got a number (1.5)"},
		{"int32 overflow", head + "  - name: a\n    retries: 3000000000\n", "line 4: tests[0].retries: 3000000000 is out of range"},
		{"threshold a string", head + "  - name: a\n    pass_threshold: high\n", "line 4: tests[0].pass_threshold: expected a number"},
		{"bool a string", head + "  - name: a\n    run: {headless: \"false\"}\n", "line 4: tests[0].run.headless: expected true or false"},
		{"string a mapping", head + "  - name: a\n    description: {a: b}\n", "line 4: tests[0].description: expected a string, got a mapping"},
		{"list a scalar", head + "  - name: a\n    tags: smoke\n", "line 4: tests[0].tags: expected a list"},
		{"null in a list", head + "  - name: a\n    tags: [a, ~]\n", "line 4: tests[0].tags[1]: a value is required"},
		{"bad enum", head + "  - name: a\n    run: {judge: {strategy: LLM}}\n", "line 4: tests[0].run.judge.strategy: expected one of JUDGE_STRATEGY_UNSPECIFIED"},
		{"bad duration", head + "  - name: a\n    timeout: 90\n", `line 4: tests[0].timeout: invalid duration "90"`},
		{"duration a mapping", head + "  - name: a\n    timeout: {seconds: 90}\n", "line 4: tests[0].timeout: expected a duration"},
		{"duration out of range", "suite: s\ndefault_timeout: 999999999999s\ntests: [{name: a}]\n", `line 2: default_timeout: duration "999999999999s" is out of range`},
		{"bad timestamp", head + "  - name: a\n    run: {auth: {bindings: [{cookie: {cookies: [{expires: tomorrow}]}}]}}\n", "expected an RFC 3339 time"},
		{"struct not a mapping", head + "  - name: a\n    oracles: [{data_schema: [1]}]\n", "line 4: tests[0].oracles[0].data_schema: expected a mapping, got a list"},
		{"nan in struct", head + "  - name: a\n    oracles: [{data_schema: {x: .nan}}]\n", "line 4: tests[0].oracles[0].data_schema.x: .nan is not a JSON number"},
		{"custom tag", head + "  - name: !secret a\n", `line 3: tests[0].name: unsupported YAML tag "!secret"`},
		{"complex key", head + "  - {[a]: b, name: a}\n", "line 3: tests[0]: a key must be a string"},
		{"bad merge", head + "  - name: a\n    run: {<<: 1}\n", "a merge key (<<) takes a mapping"},
		{"empty not empty", head + "  - name: a\n    run: {}\n    oracles: [{goal: {min: 1}}]\n", `unknown field "min"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseFile([]byte(tc.yaml))
			require.Error(t, err)
			var fe *FileError
			require.True(t, errors.As(err, &fe), "%T: %v", err, err)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseFileLimits(t *testing.T) {
	t.Parallel()
	t.Run("size", func(t *testing.T) {
		t.Parallel()
		big := "suite: s\ntests: [{name: a}]\n#" + strings.Repeat("x", MaxFileBytes)
		_, _, err := ParseFile([]byte(big))
		require.ErrorContains(t, err, "at most 1 MiB")
	})
	t.Run("tests", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString("suite: s\ntests:\n")
		for i := range MaxFileTests + 1 {
			b.WriteString("  - name: t" + strings.Repeat("x", i%3) + "\n")
		}
		_, _, err := ParseFile([]byte(b.String()))
		require.ErrorContains(t, err, "line 3: tests: 501 tests; a suite file holds at most 500")
	})
	t.Run("500 tests", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString("suite: s\ntests:\n")
		for i := range MaxFileTests {
			b.WriteString("  - {name: t" + strings.Repeat("0", 4) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "}\n")
		}
		_, tests, err := ParseFile([]byte(b.String()))
		require.NoError(t, err)
		require.Len(t, tests, MaxFileTests)
	})
	t.Run("alias bomb", func(t *testing.T) {
		t.Parallel()
		bomb := `suite: s
tests:
  - name: a
    oracles:
      - data_schema:
          a: &a ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]
          b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
          c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
          d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
          e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
          f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
          g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
          h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
          i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
`
		_, _, err := ParseFile([]byte(bomb))
		require.ErrorContains(t, err, "too much data through aliases")
	})
}

// FuzzParseFile checks that no input panics and that whatever parses
// writes back to a file that parses to the same messages.
func FuzzParseFile(f *testing.F) {
	if data, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("suite: s\ntests: [{name: a, run: {goal: g, labels: {a: b}}, oracles: [{goal: {}}]}]\n"))
	f.Add([]byte("suite: s\ntests:\n  - name: a\n    timeout: 1.5s\n    oracles: [{data_schema: {a: [1, null, true, x]}}]\n"))
	f.Add([]byte("suite: &x s\ntests: [{name: *x}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, tests, err := ParseFile(data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FileError: %v", err, err)
			}
			return
		}
		out, err := MarshalFile(s, tests)
		if err != nil {
			// Only what cannot be written: invalid UTF-8 that YAML let through.
			if !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("MarshalFile: %v", err)
			}
			return
		}
		s2, tests2, err := ParseFile(out)
		if err != nil {
			t.Fatalf("ParseFile(MarshalFile): %v\n%s", err, out)
		}
		requireEqualFile(t, s, s2, tests, tests2)
	})
}
