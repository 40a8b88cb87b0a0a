package api

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// fakeSuiteQueue records the suite run jobs it is given.
type fakeSuiteQueue struct {
	mu        sync.Mutex
	enqueued  []string
	cancelled []int64
}

func (q *fakeSuiteQueue) EnqueueSuiteRunTx(_ context.Context, _ pgx.Tx, id string) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enqueued = append(q.enqueued, id)
	return int64(len(q.enqueued)), nil
}

func (q *fakeSuiteQueue) CancelJobTx(_ context.Context, _ pgx.Tx, jobID int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancelled = append(q.cancelled, jobID)
	return nil
}

func (q *fakeSuiteQueue) counts() (enqueued, cancelled int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.enqueued), len(q.cancelled)
}

type testsBundle struct {
	svc         *TestService
	st          *store.Store
	q           *fakeSuiteQueue
	kr          *secrets.Keyring
	acme, other context.Context
}

func setupTestService(t *testing.T) testsBundle {
	t.Helper()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	for _, id := range []string{"acme", "other"} {
		_, err := st.CreateTenant(t.Context(), &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	kr, err := secrets.Parse("k1:" + strings.Repeat("a", 64))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	hub := events.NewHub(pool, store.NotifyChannel, log)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	models := &worker.Models{DefaultProvider: "anthropic", APIKeys: map[string]string{"anthropic": "server-key"}}
	runs := NewRunService(Config{Store: st, Queue: nopQueue{}, MaxRunTimeout: testMaxRunTimeout, Logger: log, Models: models})
	q := &fakeSuiteQueue{}
	svc := NewTestService(TestConfig{Store: st, Queue: q, Hub: hub, Runs: runs, MaxRunTimeout: testMaxRunTimeout, Logger: log})
	return testsBundle{svc: svc, st: st, q: q, kr: kr, acme: asTenant("acme"), other: asTenant("other")}
}

func (b testsBundle) credential(t *testing.T, ctx context.Context, tenantID, name string) {
	t.Helper()
	_, err := b.st.CreateCredential(ctx, b.kr, store.NewCredential{Tenant: tenantID, Name: name,
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, Values: map[string]string{"username": "demo", "password": "hunter2-demo"}})
	require.NoError(t, err)
}

// validTest returns a valid test named name, edited by edit.
func validTest(name string, edit func(*wfv1.Test)) *wfv1.Test {
	t := &wfv1.Test{
		Name: name, Description: "checks " + name, Params: validParams(nil), Tags: []string{"smoke"},
		Retries: 1, PassThreshold: proto.Float64(0.8), Timeout: durationpb.New(90 * time.Second),
		Oracles: []*wfv1.Oracle{
			{Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{MinConfidence: 0.6}}},
			{Check: &wfv1.Oracle_UrlPattern{UrlPattern: "/pricing$"}},
			{Name: "price", Weight: proto.Float64(2), Required: true, Check: &wfv1.Oracle_TextPresent{TextPresent: "per month"}},
			{Check: &wfv1.Oracle_ElementPresent{ElementPresent: "table.prices"}},
			{Check: &wfv1.Oracle_DataSchema{DataSchema: mustStruct(map[string]any{"type": "object", "required": []any{"price"}})}},
			{Check: &wfv1.Oracle_Rubric{Rubric: &wfv1.RubricOracle{Rubric: "The pricing table is shown", PassScore: proto.Float64(0.7)}}},
		},
	}
	if edit != nil {
		edit(t)
	}
	return t
}

// mustStruct builds fixed test data.
func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

// errorReason returns the ErrorInfo reason of err's status ("" for none),
// checking that its BadRequest detail names the same fields as err.
func errorReason(t *testing.T, err error) string {
	t.Helper()
	st := status.Convert(toStatus(context.Background(), slog.New(slog.DiscardHandler), "test", err))
	reason := ""
	var fields []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.Reason
			require.Equal(t, errorDomain, d.Domain)
		case *errdetails.BadRequest:
			for _, v := range d.FieldViolations {
				fields = append(fields, v.Field)
			}
		}
	}
	require.Equal(t, violationFields(t, err), fields, "the status's BadRequest")
	return reason
}

func TestTestServiceCRUD(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	ctx := b.acme

	in := validTest("pricing", nil)
	created, err := b.svc.CreateTest(ctx, &wfv1.CreateTestRequest{Test: in})
	require.NoError(t, err)
	require.NotNil(t, created.CreateTime)
	got, err := b.svc.GetTest(ctx, &wfv1.GetTestRequest{Name: "pricing"})
	require.NoError(t, err)
	got.CreateTime, got.UpdateTime = nil, nil
	require.True(t, proto.Equal(in, got), "stored as given (no defaults filled in): %v", got)
	_, err = b.svc.CreateTest(ctx, &wfv1.CreateTestRequest{Test: in})
	require.Equal(t, codes.AlreadyExists, codeOf(err))

	_, err = b.svc.UpdateTest(ctx, &wfv1.UpdateTestRequest{Test: validTest("other-test", nil)})
	require.Equal(t, codes.NotFound, codeOf(err))
	up, err := b.svc.UpdateTest(ctx, &wfv1.UpdateTestRequest{Test: validTest("other-test", func(t *wfv1.Test) { t.Tags = []string{"nightly"} }), AllowMissing: true})
	require.NoError(t, err)
	require.Equal(t, []string{"nightly"}, up.Tags)

	list, err := b.svc.ListTests(ctx, &wfv1.ListTestsRequest{PageSize: 1})
	require.NoError(t, err)
	require.Len(t, list.Tests, 1)
	require.NotEmpty(t, list.NextPageToken)
	list, err = b.svc.ListTests(ctx, &wfv1.ListTestsRequest{PageSize: 1, PageToken: list.NextPageToken})
	require.NoError(t, err)
	require.Equal(t, "pricing", list.Tests[0].Name)
	list, err = b.svc.ListTests(ctx, &wfv1.ListTestsRequest{Tag: "nightly"})
	require.NoError(t, err)
	require.Len(t, list.Tests, 1)
	require.Equal(t, "other-test", list.Tests[0].Name)

	su := &wfv1.Suite{Name: "smoke", Tests: []string{"pricing", "other-test"}, Concurrency: 2, DefaultTimeout: durationpb.New(2 * time.Minute)}
	_, err = b.svc.CreateSuite(ctx, &wfv1.CreateSuiteRequest{Suite: su})
	require.NoError(t, err)
	_, err = b.svc.CreateSuite(ctx, &wfv1.CreateSuiteRequest{Suite: &wfv1.Suite{Name: "ghost", Tests: []string{"nope"}}})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
	require.Equal(t, []string{"suite.tests[0]"}, violationFields(t, err))
	gotSuite, err := b.svc.GetSuite(ctx, &wfv1.GetSuiteRequest{Name: "smoke"})
	require.NoError(t, err)
	require.Equal(t, su.Tests, gotSuite.Tests)
	suites, err := b.svc.ListSuites(ctx, &wfv1.ListSuitesRequest{})
	require.NoError(t, err)
	require.Len(t, suites.Suites, 1)

	_, err = b.svc.DeleteTest(ctx, &wfv1.DeleteTestRequest{Name: "pricing"})
	require.Equal(t, codes.FailedPrecondition, codeOf(err), "a suite lists it: %v", err)
	_, err = b.svc.UpdateSuite(ctx, &wfv1.UpdateSuiteRequest{Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"other-test"}}})
	require.NoError(t, err)
	_, err = b.svc.DeleteTest(ctx, &wfv1.DeleteTestRequest{Name: "pricing"})
	require.NoError(t, err)
	_, err = b.svc.DeleteSuite(ctx, &wfv1.DeleteSuiteRequest{Name: "smoke"})
	require.NoError(t, err)
	_, err = b.svc.GetSuite(ctx, &wfv1.GetSuiteRequest{Name: "smoke"})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.svc.GetTest(ctx, &wfv1.GetTestRequest{Name: "Bad Name"})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
}

func TestTestServiceValidation(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	b.credential(t, b.acme, "acme", "demo-user")
	oracle := func(o *wfv1.Oracle) func(*wfv1.Test) {
		return func(t *wfv1.Test) { t.Oracles = []*wfv1.Oracle{o} }
	}
	rubric := func(r *wfv1.RubricOracle) func(*wfv1.Test) {
		return oracle(&wfv1.Oracle{Check: &wfv1.Oracle_Rubric{Rubric: r}})
	}
	params := func(edit func(p *wfv1.RunParams)) func(*wfv1.Test) {
		return func(t *wfv1.Test) { edit(t.Params) }
	}
	binding := func(m *wfv1.DomainAuthBinding) func(*wfv1.Test) {
		return params(func(p *wfv1.RunParams) {
			m.Domains = []string{"example.com"}
			p.Auth = &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{m}}
		})
	}
	cases := []struct {
		name   string
		edit   func(*wfv1.Test)
		fields []string // every violation, in order
		secret bool     // reason INLINE_SECRET
	}{
		{"name", func(t *wfv1.Test) { t.Name = "Bad Name" }, []string{"test.name"}, false},
		{"long description", func(t *wfv1.Test) { t.Description = strings.Repeat("x", 1001) }, []string{"test.description"}, false},
		{"too many tags", func(t *wfv1.Test) { t.Tags = strings.Split(strings.Repeat("a,", 21)[:41], ",") }, []string{"test.tags"}, false},
		{"bad tag", func(t *wfv1.Test) { t.Tags = []string{"ok", "Not OK"} }, []string{"test.tags[1]"}, false},
		{"pass threshold", func(t *wfv1.Test) { t.PassThreshold = proto.Float64(1.5) }, []string{"test.pass_threshold"}, false},
		{"retries", func(t *wfv1.Test) { t.Retries = 6 }, []string{"test.retries"}, false},
		{"reserved label", func(t *wfv1.Test) { t.Params.Labels = map[string]string{"suite_run": "x"} }, []string{`test.params.labels["suite_run"]`}, false},
		{"labels a suite run has no room for", func(t *wfv1.Test) {
			t.Params.Labels = map[string]string{}
			for i := range 31 {
				t.Params.Labels[fmt.Sprintf("l%d", i)] = "x"
			}
		}, []string{"test.params.labels"}, false},
		{"negative retries", func(t *wfv1.Test) { t.Retries = -1 }, []string{"test.retries"}, false},
		{"timeout over the server's limit", func(t *wfv1.Test) { t.Timeout = durationpb.New(testMaxRunTimeout + time.Second) }, []string{"test.timeout"}, false},
		{"timeout too short", func(t *wfv1.Test) { t.Timeout = durationpb.New(time.Second) }, []string{"test.timeout"}, false},
		{"no params", func(t *wfv1.Test) { t.Params = nil }, []string{"test.params"}, false},
		{"params checked as CreateRun's", params(func(p *wfv1.RunParams) { p.Goal = ""; p.MaxSteps = 1000 }),
			[]string{"test.params.goal", "test.params.max_steps"}, false},
		{"unknown replay mode", params(func(p *wfv1.RunParams) { p.Replay = &wfv1.ReplayOptions{Mode: 9} }),
			[]string{"test.params.replay.mode"}, false},
		{"a replay trace without a replay", params(func(p *wfv1.RunParams) {
			p.Replay = &wfv1.ReplayOptions{TraceId: "4f1c2f4e-53a6-4d0b-9a53-1f0d5c4c1e11"}
		}), []string{"test.params.replay.trace_id"}, false},
		{"params' run_timeout", params(func(p *wfv1.RunParams) { p.Browser = &wfv1.BrowserConfig{RunTimeout: durationpb.New(time.Minute)} }),
			[]string{"test.params.browser.run_timeout"}, false},
		{"report indicators with the oracles' over the limit", params(func(p *wfv1.RunParams) {
			p.Completion = &wfv1.CompletionCriteria{}
			for i := range 19 {
				p.Completion.Report = append(p.Completion.Report, &wfv1.Indicator{Name: fmt.Sprintf("r%d", i),
					Condition: &wfv1.Indicator_UrlPattern{UrlPattern: "x"}})
			}
		}), []string{"test.params.completion.report"}, false},
		{"unknown credential", binding(&wfv1.DomainAuthBinding{Credential: "nope"}), []string{"test.params.auth.bindings[0].credential"}, false},
		{"unknown prompt", params(func(p *wfv1.RunParams) {
			p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "missing"}}
		}), []string{"test.params.controller.prompt_ref"}, false},
		{"oracle without a check", oracle(&wfv1.Oracle{Name: "empty"}), []string{"test.oracles[0]"}, false},
		{"oracle name", oracle(&wfv1.Oracle{Name: " padded\t", Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}), []string{"test.oracles[0].name"}, false},
		{"duplicate default names", func(t *wfv1.Test) {
			t.Oracles = []*wfv1.Oracle{{Check: &wfv1.Oracle_UrlPattern{UrlPattern: "a"}}, {Check: &wfv1.Oracle_UrlPattern{UrlPattern: "b"}}}
		}, []string{"test.oracles[1].name"}, false},
		{"duplicate names", func(t *wfv1.Test) {
			t.Oracles = []*wfv1.Oracle{{Name: "x", Check: &wfv1.Oracle_UrlPattern{UrlPattern: "a"}}, {Name: "x", Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}}
		}, []string{"test.oracles[1].name"}, false},
		{"weight over 100", oracle(&wfv1.Oracle{Weight: proto.Float64(101), Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}), []string{"test.oracles[0].weight"}, false},
		{"negative weight", oracle(&wfv1.Oracle{Weight: proto.Float64(-1), Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}), []string{"test.oracles[0].weight"}, false},
		{"weights sum to 0", oracle(&wfv1.Oracle{Weight: proto.Float64(0), Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}}), []string{"test.oracles"}, false},
		{"too many oracles", func(t *wfv1.Test) {
			t.Oracles = nil
			for i := range 21 {
				t.Oracles = append(t.Oracles, &wfv1.Oracle{Name: fmt.Sprintf("o%d", i), Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{}}})
			}
		}, []string{"test.oracles"}, false},
		{"goal min_confidence", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{MinConfidence: 1.2}}}), []string{"test.oracles[0].goal.min_confidence"}, false},
		{"url_pattern not RE2", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_UrlPattern{UrlPattern: "(?<=x)"}}), []string{"test.oracles[0].url_pattern"}, false},
		{"url_pattern empty", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_UrlPattern{}}), []string{"test.oracles[0].url_pattern"}, false},
		{"text_present blank", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_TextPresent{TextPresent: "  "}}), []string{"test.oracles[0].text_present"}, false},
		{"text_present too long", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_TextPresent{TextPresent: strings.Repeat("x", 1001)}}), []string{"test.oracles[0].text_present"}, false},
		{"element_present empty", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_ElementPresent{}}), []string{"test.oracles[0].element_present"}, false},
		{"data_schema invalid", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_DataSchema{DataSchema: mustStruct(map[string]any{"type": 5})}}), []string{"test.oracles[0].data_schema"}, false},
		{"data_schema remote ref", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_DataSchema{DataSchema: mustStruct(map[string]any{"$ref": "https://example.com/s.json"})}}),
			[]string{"test.oracles[0].data_schema"}, false},
		{"data_schema file ref", oracle(&wfv1.Oracle{Check: &wfv1.Oracle_DataSchema{DataSchema: mustStruct(map[string]any{"$ref": "file:///etc/passwd"})}}),
			[]string{"test.oracles[0].data_schema"}, false},
		{"rubric empty", rubric(&wfv1.RubricOracle{}), []string{"test.oracles[0].rubric.rubric"}, false},
		{"rubric too long", rubric(&wfv1.RubricOracle{Rubric: strings.Repeat("x", 10001)}), []string{"test.oracles[0].rubric.rubric"}, false},
		{"rubric pass_score", rubric(&wfv1.RubricOracle{Rubric: "ok", PassScore: proto.Float64(-0.1)}), []string{"test.oracles[0].rubric.pass_score"}, false},
		{"rubric model with a prompt", rubric(&wfv1.RubricOracle{Rubric: "ok", Model: &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptText{PromptText: "x"}}}),
			[]string{"test.oracles[0].rubric.model"}, false},
		{"rubric model temperature", rubric(&wfv1.RubricOracle{Rubric: "ok", Model: &wfv1.ModelSettings{Temperature: proto.Float64(3)}}),
			[]string{"test.oracles[0].rubric.model.temperature"}, false},
		{"rubric model provider", rubric(&wfv1.RubricOracle{Rubric: "ok", Model: &wfv1.ModelSettings{Provider: "nope"}}),
			[]string{"test.oracles[0].rubric.model.provider"}, false},
		{"rubric model not an LLM", rubric(&wfv1.RubricOracle{Rubric: "ok", Model: &wfv1.ModelSettings{Provider: "steps"}}),
			[]string{"test.oracles[0].rubric.model.provider"}, false},
		{"rubric model credential", rubric(&wfv1.RubricOracle{Rubric: "ok", Model: &wfv1.ModelSettings{ApiKeyCredential: "missing-key"}}),
			[]string{"test.oracles[0].rubric.model.api_key_credential"}, false},
		// Inline secrets.
		{"basic password", binding(&wfv1.DomainAuthBinding{Credential: "demo-user",
			Method: &wfv1.DomainAuthBinding_Basic{Basic: &wfv1.BasicAuth{Password: "hunter2"}}}),
			[]string{"test.params.auth.bindings[0].basic.password"}, true},
		{"bearer token", binding(&wfv1.DomainAuthBinding{Method: &wfv1.DomainAuthBinding_Bearer{Bearer: &wfv1.BearerAuth{Token: "tok-123"}}}),
			[]string{"test.params.auth.bindings[0].bearer.token"}, true},
		{"cookie value", binding(&wfv1.DomainAuthBinding{Method: &wfv1.DomainAuthBinding_Cookie{Cookie: &wfv1.CookieAuth{
			Cookies: []*wfv1.Cookie{{Name: "sid", Value: "s3cr3t"}}}}}),
			[]string{"test.params.auth.bindings[0].cookie.cookies[0].value"}, true},
		{"webhook secret", params(func(p *wfv1.RunParams) {
			p.Webhook = &wfv1.RunWebhook{Url: "https://hooks.example.com/run", Secret: "0123456789abcdef0123"}
		}), []string{"test.params.webhook.secret"}, true},
		{"tool header", params(func(p *wfv1.RunParams) {
			p.Tools = []*wfv1.ToolDefinition{{Name: "lookup", Description: "Look up.", InputSchema: mustStruct(map[string]any{"type": "object"}),
				Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{Url: "https://hooks.example.com/t",
					Headers: map[string]string{"Authorization": "Bearer x"}}}}}
		}), []string{`test.params.tools[0].webhook.headers["Authorization"]`}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			test := validTest("t1", c.edit)
			_, err := b.svc.CreateTest(b.acme, &wfv1.CreateTestRequest{Test: test})
			require.Equal(t, codes.InvalidArgument, codeOf(err), "%v", err)
			require.Equal(t, c.fields, violationFields(t, err))
			require.Equal(t, c.secret, errorReason(t, err) == ReasonInlineSecret, "reason of %v", err)
			require.NotContains(t, err.Error(), "hunter2")
			require.NotContains(t, err.Error(), "s3cr3t")
			// UpdateTest checks the same.
			_, err = b.svc.UpdateTest(b.acme, &wfv1.UpdateTestRequest{Test: test, AllowMissing: true})
			require.Equal(t, c.fields, violationFields(t, err))
		})
	}
	list, err := b.svc.ListTests(b.acme, &wfv1.ListTestsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Tests, "no invalid test was stored")

	// A credential a test names is not a secret.
	_, err = b.svc.CreateTest(b.acme, &wfv1.CreateTestRequest{Test: validTest("login", binding(&wfv1.DomainAuthBinding{Credential: "demo-user"}))})
	require.NoError(t, err)

	suites := []struct {
		name   string
		suite  *wfv1.Suite
		fields []string
	}{
		{"no suite", nil, []string{"suite"}},
		{"no tests", &wfv1.Suite{Name: "s"}, []string{"suite.tests"}},
		{"duplicate test", &wfv1.Suite{Name: "s", Tests: []string{"login", "login"}}, []string{"suite.tests[1]"}},
		{"bad test name", &wfv1.Suite{Name: "s", Tests: []string{"Login"}}, []string{"suite.tests[0]"}},
		{"concurrency", &wfv1.Suite{Name: "s", Tests: []string{"login"}, Concurrency: 65}, []string{"suite.concurrency"}},
		{"default timeout", &wfv1.Suite{Name: "s", Tests: []string{"login"}, DefaultTimeout: durationpb.New(time.Hour)}, []string{"suite.default_timeout"}},
		{"name and tags", &wfv1.Suite{Name: "S", Tests: []string{"login"}, Tags: []string{""}}, []string{"suite.name", "suite.tags[0]"}},
		{"description", &wfv1.Suite{Name: "s", Tests: []string{"login"}, Description: strings.Repeat("d", 1001)}, []string{"suite.description"}},
	}
	for _, c := range suites {
		t.Run("suite "+c.name, func(t *testing.T) {
			_, err := b.svc.CreateSuite(b.acme, &wfv1.CreateSuiteRequest{Suite: c.suite})
			require.Equal(t, c.fields, violationFields(t, err))
			_, err = b.svc.UpdateSuite(b.acme, &wfv1.UpdateSuiteRequest{Suite: c.suite, AllowMissing: true})
			require.Equal(t, c.fields, violationFields(t, err))
		})
	}
}

func TestTestServiceTenants(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	_, err := b.svc.CreateTest(b.acme, &wfv1.CreateTestRequest{Test: validTest("pricing", nil)})
	require.NoError(t, err)
	_, err = b.svc.CreateSuite(b.acme, &wfv1.CreateSuiteRequest{Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"pricing"}}})
	require.NoError(t, err)
	sr, err := b.svc.StartSuiteRun(b.acme, &wfv1.StartSuiteRunRequest{Suite: "smoke", RequestId: "r1"})
	require.NoError(t, err)

	o := b.other
	notFound := map[string]func() error{
		"GetTest": func() error { _, err := b.svc.GetTest(o, &wfv1.GetTestRequest{Name: "pricing"}); return err },
		"UpdateTest": func() error {
			_, err := b.svc.UpdateTest(o, &wfv1.UpdateTestRequest{Test: validTest("pricing", nil)})
			return err
		},
		"DeleteTest": func() error { _, err := b.svc.DeleteTest(o, &wfv1.DeleteTestRequest{Name: "pricing"}); return err },
		"GetSuite":   func() error { _, err := b.svc.GetSuite(o, &wfv1.GetSuiteRequest{Name: "smoke"}); return err },
		"UpdateSuite": func() error {
			_, err := b.svc.UpdateSuite(o, &wfv1.UpdateSuiteRequest{Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"pricing"}}})
			return err
		},
		"DeleteSuite":    func() error { _, err := b.svc.DeleteSuite(o, &wfv1.DeleteSuiteRequest{Name: "smoke"}); return err },
		"ExportSuite":    func() error { _, err := b.svc.ExportSuite(o, &wfv1.ExportSuiteRequest{Name: "smoke"}); return err },
		"StartSuiteRun":  func() error { _, err := b.svc.StartSuiteRun(o, &wfv1.StartSuiteRunRequest{Suite: "smoke"}); return err },
		"GetSuiteRun":    func() error { _, err := b.svc.GetSuiteRun(o, &wfv1.GetSuiteRunRequest{Id: sr.Id}); return err },
		"CancelSuiteRun": func() error { _, err := b.svc.CancelSuiteRun(o, &wfv1.CancelSuiteRunRequest{Id: sr.Id}); return err },
		"WatchSuiteRun": func() error {
			return b.svc.WatchSuiteRun(&wfv1.WatchSuiteRunRequest{Id: sr.Id}, &fakeWatchStream{ctx: o})
		},
	}
	for name, call := range notFound {
		require.Equal(t, codes.NotFound, codeOf(call()), name)
	}
	// Another tenant's suite cannot list acme's test, nor its request ID
	// return acme's suite run.
	_, err = b.svc.CreateSuite(o, &wfv1.CreateSuiteRequest{Suite: &wfv1.Suite{Name: "mine", Tests: []string{"pricing"}}})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
	tests, err := b.svc.ListTests(o, &wfv1.ListTestsRequest{})
	require.NoError(t, err)
	require.Empty(t, tests.Tests)
	suites, err := b.svc.ListSuites(o, &wfv1.ListSuitesRequest{})
	require.NoError(t, err)
	require.Empty(t, suites.Suites)
	runs, err := b.svc.ListSuiteRuns(o, &wfv1.ListSuiteRunsRequest{})
	require.NoError(t, err)
	require.Empty(t, runs.SuiteRuns)

	// Nothing of acme's changed.
	got, err := b.svc.GetSuiteRun(b.acme, &wfv1.GetSuiteRunRequest{Id: sr.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, got.Status)
	require.False(t, got.CancelRequested)
	_, err = b.svc.GetTest(b.acme, &wfv1.GetTestRequest{Name: "pricing"})
	require.NoError(t, err)
}

const suiteFile = `suite: shop
description: Shop smoke tests
concurrency: 2
default_timeout: 2m
tests:
  - name: login
    tags: [auth]
    retries: 1
    timeout: 90s
    run:
      goal: Log in as the demo user
      start_url: https://shop.example.com/login
      auth:
        bindings:
          - domains: [shop.example.com]
            credential: demo-user
    oracles:
      - goal: {min_confidence: 0.7}
      - url_pattern: /dashboard$
  - name: cart
    tags: [cart]
    run:
      goal: Add the blue mug to the cart
      start_url: https://shop.example.com/
    oracles:
      - data_schema: {type: object, required: [total]}
      - rubric: {rubric: "The cart holds one blue mug", pass_score: 0.8}
`

func TestImportExportSuite(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	b.credential(t, b.acme, "acme", "demo-user")

	resp, err := b.svc.ImportSuite(b.acme, &wfv1.ImportSuiteRequest{Yaml: suiteFile})
	require.NoError(t, err)
	require.Equal(t, "shop", resp.Suite.Name)
	require.Equal(t, []string{"login", "cart"}, resp.Suite.Tests)
	require.Len(t, resp.Tests, 2)
	login, err := b.svc.GetTest(b.acme, &wfv1.GetTestRequest{Name: "login"})
	require.NoError(t, err)
	require.EqualValues(t, 1, login.Retries)

	exported, err := b.svc.ExportSuite(b.acme, &wfv1.ExportSuiteRequest{Name: "shop"})
	require.NoError(t, err)
	// The export reads back to the same suite and tests.
	_, err = b.svc.DeleteSuite(b.acme, &wfv1.DeleteSuiteRequest{Name: "shop"})
	require.NoError(t, err)
	again, err := b.svc.ImportSuite(b.acme, &wfv1.ImportSuiteRequest{Yaml: exported.Yaml})
	require.NoError(t, err)
	strip := func(m proto.Message) proto.Message {
		c := proto.Clone(m)
		switch x := c.(type) {
		case *wfv1.Suite:
			x.CreateTime, x.UpdateTime = nil, nil
		case *wfv1.Test:
			x.CreateTime, x.UpdateTime = nil, nil
		}
		return c
	}
	require.True(t, proto.Equal(strip(resp.Suite), strip(again.Suite)), "suite %v", again.Suite)
	for i := range resp.Tests {
		require.True(t, proto.Equal(strip(resp.Tests[i]), strip(again.Tests[i])), "test %v", again.Tests[i])
	}

	// Another tenant lacks the credential the file names.
	_, err = b.svc.ImportSuite(b.other, &wfv1.ImportSuiteRequest{Yaml: suiteFile})
	require.Equal(t, []string{"tests[0].params.auth.bindings[0].credential"}, violationFields(t, err))
}

func TestImportSuiteRefusals(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	b.credential(t, b.acme, "acme", "demo-user")
	cases := []struct {
		name   string
		yaml   string
		fields []string
		secret bool
	}{
		{"empty", "", []string{"yaml"}, false},
		{"not a suite file", "suite: x\nnonsense: 1\n", []string{"yaml"}, false},
		{"too big", strings.Repeat("#", maxSuiteFileBytes+1), []string{"yaml"}, false},
		{"a bad second test", strings.Replace(suiteFile, "pass_score: 0.8", "pass_score: 1.8", 1),
			[]string{"tests[1].oracles[1].rubric.pass_score"}, false},
		{"a bad suite and test", strings.Replace(strings.Replace(suiteFile, "concurrency: 2", "concurrency: 99", 1), "retries: 1", "retries: 9", 1),
			[]string{"suite.concurrency", "tests[0].retries"}, false},
		{"an inline password", strings.Replace(suiteFile, "credential: demo-user", "basic: {username: demo, password: hunter2}", 1),
			[]string{"tests[0].params.auth.bindings[0].basic.password"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.svc.ImportSuite(b.acme, &wfv1.ImportSuiteRequest{Yaml: c.yaml})
			require.Equal(t, codes.InvalidArgument, codeOf(err), "%v", err)
			require.Equal(t, c.fields, violationFields(t, err))
			require.Equal(t, c.secret, errorReason(t, err) == ReasonInlineSecret)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
	// Nothing was written.
	tests, err := b.svc.ListTests(b.acme, &wfv1.ListTestsRequest{})
	require.NoError(t, err)
	require.Empty(t, tests.Tests)
	suites, err := b.svc.ListSuites(b.acme, &wfv1.ListSuitesRequest{})
	require.NoError(t, err)
	require.Empty(t, suites.Suites)
}

func TestStartSuiteRun(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	b.credential(t, b.acme, "acme", "demo-user")
	ctx := b.acme
	_, err := b.svc.ImportSuite(ctx, &wfv1.ImportSuiteRequest{Yaml: suiteFile})
	require.NoError(t, err)

	sr, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", Tags: []string{"cart", "other"}, RequestId: "ci-42"})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, sr.Status)
	require.Equal(t, []string{"cart", "other"}, sr.Tags)
	require.Len(t, sr.Results, 1, "only the tagged test")
	require.Equal(t, "cart", sr.Results[0].Test)
	require.InDelta(t, 1, sr.Results[0].PassThreshold, 1e-9, "the default threshold")
	enqueued, _ := b.q.counts()
	require.Equal(t, 1, enqueued)

	// The same request ID returns the first suite run, whatever else the
	// request says.
	again, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", RequestId: "ci-42"})
	require.NoError(t, err)
	require.Equal(t, sr.Id, again.Id)
	enqueued, _ = b.q.counts()
	require.Equal(t, 1, enqueued)

	_, err = b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", Tags: []string{"nothing"}})
	require.Equal(t, codes.FailedPrecondition, codeOf(err))
	_, err = b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "nope"})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", Tags: []string{"Bad Tag"}, RequestId: strings.Repeat("r", 201)})
	require.Equal(t, []string{"tags[0]", "request_id"}, violationFields(t, err))

	all, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop"})
	require.NoError(t, err)
	require.Len(t, all.Results, 2)

	// The suite run keeps its snapshot; a later edit changes only later
	// suite runs.
	spec, err := b.st.SuiteRunSpec(ctx, all.Id)
	require.NoError(t, err)
	require.Equal(t, "login", spec.Tests[0].Name)

	// A credential deleted since the test was stored stops the suite run
	// from starting, naming the test.
	require.NoError(t, b.st.DeleteCredential(ctx, "acme", "demo-user"))
	_, err = b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop"})
	require.Equal(t, codes.FailedPrecondition, codeOf(err))
	require.Contains(t, err.Error(), `"login"`)
	// The tests left by the tag filter still run.
	_, err = b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", Tags: []string{"cart"}})
	require.NoError(t, err)

	list, err := b.svc.ListSuiteRuns(ctx, &wfv1.ListSuiteRunsRequest{Suite: "shop", PageSize: 2})
	require.NoError(t, err)
	require.Len(t, list.SuiteRuns, 2)
	require.NotEmpty(t, list.NextPageToken)
	require.Empty(t, list.SuiteRuns[0].Results)
	require.EqualValues(t, 1, list.SuiteRuns[0].Summary.GetPending())
	_, err = b.svc.ListSuiteRuns(ctx, &wfv1.ListSuiteRunsRequest{PageSize: 500})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
}

func TestCancelSuiteRun(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	ctx := b.acme
	_, err := b.svc.CreateTest(ctx, &wfv1.CreateTestRequest{Test: validTest("pricing", nil)})
	require.NoError(t, err)
	_, err = b.svc.CreateSuite(ctx, &wfv1.CreateSuiteRequest{Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"pricing"}}})
	require.NoError(t, err)

	queued, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "smoke"})
	require.NoError(t, err)
	got, err := b.svc.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{Id: queued.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, got.Status)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, got.Results[0].Outcome)
	_, cancelled := b.q.counts()
	require.Equal(t, 1, cancelled)

	running, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "smoke"})
	require.NoError(t, err)
	_, _, err = b.st.StartSuiteRun(ctx, running.Id)
	require.NoError(t, err)
	got, err = b.svc.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{Id: running.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, got.Status)
	require.True(t, got.CancelRequested)

	_, err = b.svc.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{Id: "not-an-id"})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.svc.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
}

// fakeWatchStream collects what WatchSuiteRun sends.
type fakeWatchStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent chan *wfv1.SuiteRun
}

func (f *fakeWatchStream) Context() context.Context { return f.ctx }

func (f *fakeWatchStream) Send(sr *wfv1.SuiteRun) error {
	select {
	case f.sent <- sr:
		return nil
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
}

func TestWatchSuiteRun(t *testing.T) {
	t.Parallel()
	b := setupTestService(t)
	ctx := b.acme
	_, err := b.svc.CreateTest(ctx, &wfv1.CreateTestRequest{Test: validTest("pricing", nil)})
	require.NoError(t, err)
	_, err = b.svc.CreateTest(ctx, &wfv1.CreateTestRequest{Test: validTest("search", nil)})
	require.NoError(t, err)
	_, err = b.svc.CreateSuite(ctx, &wfv1.CreateSuiteRequest{Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"pricing", "search"}}})
	require.NoError(t, err)
	sr, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "smoke"})
	require.NoError(t, err)

	// The poll is long: changes arrive through the hub.
	b.svc.cfg.PollInterval = time.Hour
	stream := &fakeWatchStream{ctx: ctx, sent: make(chan *wfv1.SuiteRun)}
	done := make(chan error, 1)
	go func() { done <- b.svc.WatchSuiteRun(&wfv1.WatchSuiteRunRequest{Id: sr.Id}, stream) }()
	next := func(what string) *wfv1.SuiteRun {
		t.Helper()
		select {
		case got := <-stream.sent:
			return got
		case err := <-done:
			t.Fatalf("%s: the watch ended: %v", what, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: nothing sent", what)
		}
		return nil
	}
	first := next("current state")
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, first.Status)

	_, _, err = b.st.StartSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, next("start").Status)
	require.NoError(t, b.st.PutTestResult(ctx, sr.Id, 0, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_PASSED, Score: 1}))
	got := next("result")
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, got.Results[0].Outcome)
	require.EqualValues(t, 1, got.Summary.Passed)
	_, err = b.st.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, "")
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, next("finish").Status)
	select {
	case err := <-done:
		require.NoError(t, err, "the watch ends after the final status")
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end after the final status")
	}

	// A final suite run is sent once and the watch ends.
	stream = &fakeWatchStream{ctx: ctx, sent: make(chan *wfv1.SuiteRun, 1)}
	require.NoError(t, b.svc.WatchSuiteRun(&wfv1.WatchSuiteRunRequest{Id: sr.Id}, stream))
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, (<-stream.sent).Status)

	// Without notifications the poll finds the changes.
	b.svc.cfg.PollInterval = 10 * time.Millisecond
	b.svc.cfg.Hub = nil
	polled, err := b.svc.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "smoke"})
	require.NoError(t, err)
	stream = &fakeWatchStream{ctx: ctx, sent: make(chan *wfv1.SuiteRun)}
	go func() { done <- b.svc.WatchSuiteRun(&wfv1.WatchSuiteRunRequest{Id: polled.Id}, stream) }()
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, next("polled state").Status)
	_, err = b.svc.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{Id: polled.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, next("polled cancel").Status)
	require.NoError(t, <-done)
}
