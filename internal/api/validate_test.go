package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// The Gemini SDK's dependencies start an OpenCensus worker at init.
func TestMain(m *testing.M) {
	// The shared test Postgres is stopped before goroutines are checked.
	code := storetest.Run(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const testMaxRunTimeout = 10 * time.Minute

// validParams returns parameters that pass validation; edit adjusts them.
func validParams(edit func(p *wfv1.RunParams)) *wfv1.RunParams {
	p := &wfv1.RunParams{Goal: "find the pricing page", StartUrl: "https://example.com/"}
	if edit != nil {
		edit(p)
	}
	return p
}

func withBrowser(edit func(b *wfv1.BrowserConfig)) func(p *wfv1.RunParams) {
	return func(p *wfv1.RunParams) {
		p.Browser = &wfv1.BrowserConfig{}
		edit(p.Browser)
	}
}

func violationFields(t *testing.T, err error) []string {
	t.Helper()
	var reqErr *fault.RequestError
	require.ErrorAs(t, err, &reqErr)
	fields := make([]string, len(reqErr.Violations))
	for i, v := range reqErr.Violations {
		require.NotEmpty(t, v.Description, "violation of %s has no description", v.Field)
		fields[i] = v.Field
	}
	return fields
}

func TestValidateParamsErrors(t *testing.T) {
	t.Parallel()
	manyLabels := map[string]string{}
	for i := range maxLabels + 1 {
		manyLabels[fmt.Sprintf("k%d", i)] = "v"
	}
	tests := []struct {
		name   string
		params *wfv1.RunParams
		kind   error
		field  string
		// only: the violations are exactly the one field.
		only bool
	}{
		{name: "nil params", params: nil, kind: fault.ErrInvalidArgument, field: "params", only: true},
		{name: "empty goal", params: validParams(func(p *wfv1.RunParams) { p.Goal = "" }), kind: fault.ErrInvalidArgument, field: "params.goal", only: true},
		{name: "whitespace goal", params: validParams(func(p *wfv1.RunParams) { p.Goal = " \t\n " }), kind: fault.ErrInvalidArgument, field: "params.goal", only: true},
		{name: "goal too long", params: validParams(func(p *wfv1.RunParams) { p.Goal = strings.Repeat("é", maxGoalLen+1) }), kind: fault.ErrInvalidArgument, field: "params.goal", only: true},
		{name: "missing start URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "start URL too long", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "https://example.com/" + strings.Repeat("a", maxURLLen) }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "malformed URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "http://[::1" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "ftp URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "ftp://example.com/file" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "javascript URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "javascript:alert(1)" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "file URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "file:///etc/passwd" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "credentials in URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "https://user:hunter2@example.com/" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "data URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "data:text/html,<h1>hi</h1>" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "relative URL", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "/pricing" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "host without scheme", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "example.com/pricing" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "URL without host", params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "https:///path" }), kind: fault.ErrInvalidArgument, field: "params.start_url", only: true},
		{name: "max_steps -1", params: validParams(func(p *wfv1.RunParams) { p.MaxSteps = -1 }), kind: fault.ErrInvalidArgument, field: "params.max_steps", only: true},
		{name: "max_steps 501", params: validParams(func(p *wfv1.RunParams) { p.MaxSteps = 501 }), kind: fault.ErrInvalidArgument, field: "params.max_steps", only: true},
		{name: "history depth -1", params: validParams(func(p *wfv1.RunParams) { p.ScreenshotHistoryDepth = proto.Int32(-1) }), kind: fault.ErrInvalidArgument, field: "params.screenshot_history_depth", only: true},
		{name: "history depth 21", params: validParams(func(p *wfv1.RunParams) { p.ScreenshotHistoryDepth = proto.Int32(21) }), kind: fault.ErrInvalidArgument, field: "params.screenshot_history_depth", only: true},
		{name: "bad allowed domain", params: validParams(func(p *wfv1.RunParams) { p.AllowedDomains = []string{"a.*.com"} }), kind: fault.ErrInvalidArgument, field: "params.allowed_domains[0]", only: true},
		{name: "bad blocked domain", params: validParams(func(p *wfv1.RunParams) { p.BlockedDomains = []string{"example.com", "https://evil.example/"} }), kind: fault.ErrInvalidArgument, field: "params.blocked_domains[1]", only: true},
		{name: "too many domains", params: validParams(func(p *wfv1.RunParams) { p.AllowedDomains = make([]string, maxDomainPatterns+1) }), kind: fault.ErrInvalidArgument, field: "params.allowed_domains", only: true},
		{name: "viewport too narrow", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Viewport = &wfv1.Viewport{Width: 199, Height: 800} })), kind: fault.ErrInvalidArgument, field: "params.browser.viewport.width", only: true},
		{name: "viewport too tall", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Viewport = &wfv1.Viewport{Width: 1280, Height: 4097} })), kind: fault.ErrInvalidArgument, field: "params.browser.viewport.height", only: true},
		{name: "viewport zero", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Viewport = &wfv1.Viewport{} })), kind: fault.ErrInvalidArgument, field: "params.browser.viewport.width"},
		{name: "user agent with newline", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.UserAgent = "bot\r\nX-Injected: 1" })), kind: fault.ErrInvalidArgument, field: "params.browser.user_agent", only: true},
		{name: "user agent too long", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.UserAgent = strings.Repeat("a", maxUserAgentLen+1) })), kind: fault.ErrInvalidArgument, field: "params.browser.user_agent", only: true},
		{name: "bad locale", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Locale = "not a locale" })), kind: fault.ErrInvalidArgument, field: "params.browser.locale", only: true},
		{name: "bad timezone", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Timezone = "Mars/Olympus_Mons" })), kind: fault.ErrInvalidArgument, field: "params.browser.timezone", only: true},
		{name: "Local timezone", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.Timezone = "Local" })), kind: fault.ErrInvalidArgument, field: "params.browser.timezone", only: true},
		{name: "navigation timeout 0.5s", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.NavigationTimeout = durationpb.New(500 * time.Millisecond) })), kind: fault.ErrInvalidArgument, field: "params.browser.navigation_timeout", only: true},
		{name: "action timeout 6m", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.ActionTimeout = durationpb.New(6 * time.Minute) })), kind: fault.ErrInvalidArgument, field: "params.browser.action_timeout", only: true},
		{name: "invalid duration", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.ActionTimeout = &durationpb.Duration{Seconds: 1, Nanos: -1} })), kind: fault.ErrInvalidArgument, field: "params.browser.action_timeout", only: true},
		{name: "run timeout above max", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.RunTimeout = durationpb.New(testMaxRunTimeout + time.Second) })), kind: fault.ErrInvalidArgument, field: "params.browser.run_timeout", only: true},
		{name: "run timeout below min", params: validParams(withBrowser(func(b *wfv1.BrowserConfig) { b.RunTimeout = durationpb.New(9 * time.Second) })), kind: fault.ErrInvalidArgument, field: "params.browser.run_timeout", only: true},
		{name: "too many labels", params: validParams(func(p *wfv1.RunParams) { p.Labels = manyLabels }), kind: fault.ErrInvalidArgument, field: "params.labels", only: true},
		{name: "bad label key", params: validParams(func(p *wfv1.RunParams) { p.Labels = map[string]string{"Bad Key": "v"} }), kind: fault.ErrInvalidArgument, field: "params.labels", only: true},
		{name: "label value too long", params: validParams(func(p *wfv1.RunParams) { p.Labels = map[string]string{"k": strings.Repeat("v", maxLabelValueLen+1)} }), kind: fault.ErrInvalidArgument, field: "params.labels", only: true},
		{name: "headful", params: validParams(func(p *wfv1.RunParams) { p.Headless = proto.Bool(false) }), kind: fault.ErrUnimplemented, field: "params.headless", only: true},
		{name: "controller prompt ref", params: validParams(func(p *wfv1.RunParams) {
			p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "Not A Name@0"}}
		}), kind: fault.ErrInvalidArgument, field: "params.controller.prompt_ref", only: true},
		{name: "controller credential name", params: validParams(func(p *wfv1.RunParams) { p.Controller = &wfv1.ModelSettings{ApiKeyCredential: "Bad Name"} }), kind: fault.ErrInvalidArgument, field: "params.controller.api_key_credential", only: true},
		{name: "controller temperature", params: validParams(func(p *wfv1.RunParams) { p.Controller = &wfv1.ModelSettings{Temperature: proto.Float64(2.5)} }), kind: fault.ErrInvalidArgument, field: "params.controller.temperature", only: true},
		{name: "controller prompt template", params: validParams(func(p *wfv1.RunParams) {
			p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptText{PromptText: "{{.Goal"}}
		}), kind: fault.ErrInvalidArgument, field: "params.controller.prompt_text", only: true},
		{name: "controller base url", params: validParams(func(p *wfv1.RunParams) { p.Controller = &wfv1.ModelSettings{BaseUrl: "ftp://x"} }), kind: fault.ErrInvalidArgument, field: "params.controller.base_url", only: true},
		{name: "judge every n", params: validParams(func(p *wfv1.RunParams) {
			p.Judge = &wfv1.JudgeSettings{Frequency: &wfv1.JudgeFrequency{Frequency: &wfv1.JudgeFrequency_EveryNSteps{EveryNSteps: 0}}}
		}), kind: fault.ErrInvalidArgument, field: "params.judge.frequency.every_n_steps", only: true},
		{name: "judge strategy", params: validParams(func(p *wfv1.RunParams) { p.Judge = &wfv1.JudgeSettings{Strategy: 99} }), kind: fault.ErrInvalidArgument, field: "params.judge.strategy", only: true},
		{name: "tool without implementation", params: validParams(func(p *wfv1.RunParams) { p.Tools = []*wfv1.ToolDefinition{{Name: "t"}} }), kind: fault.ErrInvalidArgument, field: "params.tools[0].webhook", only: true},
		{name: "tool from the catalog", params: validParams(func(p *wfv1.RunParams) {
			p.Tools = []*wfv1.ToolDefinition{{Name: "t", Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "not a name"}}}
		}), kind: fault.ErrInvalidArgument, field: "params.tools[0].catalog_ref", only: true},
		{name: "prompt runner url", params: validParams(func(p *wfv1.RunParams) { p.PromptRunner = &wfv1.PromptRunner{Url: "hook"} }), kind: fault.ErrInvalidArgument, field: "params.prompt_runner.url", only: true},
		{name: "actions per turn", params: validParams(func(p *wfv1.RunParams) { p.ActionsPerTurn = 9 }), kind: fault.ErrInvalidArgument, field: "params.actions_per_turn", only: true},
		{name: "max tokens", params: validParams(func(p *wfv1.RunParams) { p.MaxTokens = -1 }), kind: fault.ErrInvalidArgument, field: "params.max_tokens", only: true},
		{name: "rate limit", params: validParams(func(p *wfv1.RunParams) { p.Governance = &wfv1.GovernanceConfig{MaxActionsPerMinute: 601} }), kind: fault.ErrInvalidArgument, field: "params.governance.max_actions_per_minute", only: true},
		{name: "consent policy", params: validParams(func(p *wfv1.RunParams) { p.Governance = &wfv1.GovernanceConfig{Consent: 42} }), kind: fault.ErrInvalidArgument, field: "params.governance.consent", only: true},
		{name: "profile name", params: validParams(func(p *wfv1.RunParams) { p.Browser = &wfv1.BrowserConfig{Profile: "My Profile"} }), kind: fault.ErrInvalidArgument, field: "params.browser.profile", only: true},
		{
			name: "invalid and unimplemented",
			params: validParams(func(p *wfv1.RunParams) {
				p.MaxSteps = -1
				p.Headless = proto.Bool(false)
				p.Judge = &wfv1.JudgeSettings{}
			}),
			kind: fault.ErrInvalidArgument, field: "params.max_steps", only: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var before *wfv1.RunParams
			if tt.params != nil {
				before = proto.Clone(tt.params).(*wfv1.RunParams)
			}
			got, err := validateParams(tt.params, testMaxRunTimeout)
			require.Nil(t, got)
			require.ErrorIs(t, err, tt.kind)
			other := fault.ErrInvalidArgument
			if tt.kind == fault.ErrInvalidArgument {
				other = fault.ErrUnimplemented
			}
			require.NotErrorIs(t, err, other)
			fields := violationFields(t, err)
			if tt.only {
				require.Equal(t, []string{tt.field}, dedupe(fields))
			} else {
				require.Contains(t, fields, tt.field)
			}
			if tt.params != nil {
				require.True(t, proto.Equal(before, tt.params), "validateParams modified its argument")
			}
		})
	}
}

// dedupe drops repeated fields (a field may have several violations).
func dedupe(fields []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fields {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

func TestValidateParamsUnimplemented(t *testing.T) {
	t.Parallel()
	p := validParams(func(p *wfv1.RunParams) { p.Headless = proto.Bool(false) })
	_, err := validateParams(p, testMaxRunTimeout)
	require.ErrorIs(t, err, fault.ErrUnimplemented)
	require.Equal(t, []string{"params.headless"}, violationFields(t, err))
}

func TestValidateParamsValid(t *testing.T) {
	t.Parallel()
	defaults := func(p *wfv1.RunParams) *wfv1.RunParams {
		p.Goal = strings.TrimSpace(p.Goal)
		p.Headless = proto.Bool(true)
		p.MaxSteps = defaultMaxSteps
		p.ScreenshotHistoryDepth = proto.Int32(defaultHistoryDepth)
		p.Browser = &wfv1.BrowserConfig{
			Viewport:          &wfv1.Viewport{Width: 1280, Height: 800},
			NavigationTimeout: durationpb.New(30 * time.Second),
			ActionTimeout:     durationpb.New(15 * time.Second),
			RunTimeout:        durationpb.New(testMaxRunTimeout),
		}
		return p
	}
	tests := []struct {
		name   string
		params *wfv1.RunParams
		want   *wfv1.RunParams
	}{
		{
			name:   "minimal: every default filled",
			params: validParams(nil),
			want:   defaults(validParams(nil)),
		},
		{
			name:   "goal is trimmed",
			params: validParams(func(p *wfv1.RunParams) { p.Goal = "  find the pricing page\n" }),
			want:   defaults(validParams(nil)),
		},
		{
			name:   "http URL with port and query",
			params: validParams(func(p *wfv1.RunParams) { p.StartUrl = "http://localhost:8080/a?b=c#d" }),
			want:   defaults(validParams(func(p *wfv1.RunParams) { p.StartUrl = "http://localhost:8080/a?b=c#d" })),
		},
		{
			name: "explicit values are kept",
			params: validParams(func(p *wfv1.RunParams) {
				p.Headless = proto.Bool(true)
				p.MaxSteps = maxMaxSteps
				p.ScreenshotHistoryDepth = proto.Int32(0)
				p.AllowedDomains = []string{"example.com", "*.example.org"}
				p.BlockedDomains = []string{"ads.example.com"}
				p.Labels = map[string]string{"env": "prod", "team.a-b_c": ""}
				p.Browser = &wfv1.BrowserConfig{
					Viewport:          &wfv1.Viewport{Width: minViewport, Height: maxViewport},
					UserAgent:         "wayfinder-test",
					Locale:            "en-GB",
					Timezone:          "Europe/Berlin",
					NavigationTimeout: durationpb.New(time.Second),
					ActionTimeout:     durationpb.New(5 * time.Minute),
					RunTimeout:        durationpb.New(minRunTimeout),
				}
			}),
		},
		{
			name: "partial browser config gets defaults",
			params: validParams(withBrowser(func(b *wfv1.BrowserConfig) {
				b.Locale = "de"
				b.RunTimeout = durationpb.New(time.Minute)
			})),
			want: func() *wfv1.RunParams {
				p := defaults(validParams(nil))
				p.Browser.Locale = "de"
				p.Browser.RunTimeout = durationpb.New(time.Minute)
				return p
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := proto.Clone(tt.params).(*wfv1.RunParams)
			got, err := validateParams(tt.params, testMaxRunTimeout)
			require.NoError(t, err)
			want := tt.want
			if want == nil {
				want = before
			}
			require.True(t, proto.Equal(want, got), "got %v\nwant %v", got, want)
			require.True(t, proto.Equal(before, tt.params), "validateParams modified its argument")
		})
	}
}

func TestValidateParamsSmallMaxRunTimeout(t *testing.T) {
	t.Parallel()
	// A server limit below the usual minimum is still a valid run timeout.
	got, err := validateParams(validParams(nil), 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, got.GetBrowser().GetRunTimeout().AsDuration())
}

func TestParseLabelSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		selectors  []string
		want       map[string]string
		wantFields []string
	}{
		{name: "none", selectors: nil, want: map[string]string{}},
		{name: "pairs", selectors: []string{"env=prod", "team=a"}, want: map[string]string{"env": "prod", "team": "a"}},
		{name: "empty value", selectors: []string{"env="}, want: map[string]string{"env": ""}},
		{name: "value with =", selectors: []string{"q=a=b"}, want: map[string]string{"q": "a=b"}},
		{name: "no =", selectors: []string{"env=prod", "env"}, want: map[string]string{"env": "prod"}, wantFields: []string{"labels[1]"}},
		{name: "empty key", selectors: []string{"=prod"}, want: map[string]string{}, wantFields: []string{"labels[0]"}},
		{name: "bad key", selectors: []string{"Env=prod", "ok=1", "a b=c"}, want: map[string]string{"ok": "1"}, wantFields: []string{"labels[0]", "labels[2]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v fault.Violations
			got := parseLabelSelector(&v, tt.selectors)
			require.Equal(t, tt.want, got)
			err := v.Err()
			if tt.wantFields == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			require.Equal(t, tt.wantFields, violationFields(t, err))
		})
	}
}

func TestRequireID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		kind error
	}{
		{name: "empty", id: "", kind: fault.ErrInvalidArgument},
		{name: "not a UUID", id: "nope", kind: fault.ErrNotFound},
		{name: "UUID", id: "0b9f2a8c-7c51-4a8e-9d0c-3f3b3e6a8f11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := requireID("run_id", tt.id)
			if tt.kind == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.kind)
			if tt.kind == fault.ErrInvalidArgument {
				require.Equal(t, []string{"run_id"}, violationFields(t, err))
			}
		})
	}
}

func TestValidateRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      string
		wantErr bool
	}{
		{name: "empty", id: ""},
		{name: "max length", id: strings.Repeat("r", maxRequestIDLen)},
		{name: "too long", id: strings.Repeat("r", maxRequestIDLen+1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v fault.Violations
			validateRequestID(&v, tt.id)
			if !tt.wantErr {
				require.NoError(t, v.Err())
				return
			}
			require.ErrorIs(t, v.Err(), fault.ErrInvalidArgument)
			require.Equal(t, []string{"request_id"}, violationFields(t, v.Err()))
		})
	}
}

func TestToStatus(t *testing.T) {
	t.Parallel()
	const secret = "password=hunter2 host=10.1.2.3"
	reqErr := &fault.RequestError{Kind: fault.ErrInvalidArgument, Violations: []fault.FieldViolation{
		{Field: "params.goal", Description: "a goal is required"},
		{Field: "params.start_url", Description: "a start URL is required"},
	}}
	unimpl := &fault.RequestError{Kind: fault.ErrUnimplemented, Violations: []fault.FieldViolation{
		{Field: "params.judge", Description: "not yet"},
	}}
	tests := []struct {
		name       string
		err        error
		wantCode   codes.Code
		wantFields []string // BadRequest field violations, when any
		wantLogged bool
		// notInMessage must not appear in the status message.
		notInMessage string
	}{
		{name: "nil", err: nil, wantCode: codes.OK},
		{name: "request error", err: reqErr, wantCode: codes.InvalidArgument, wantFields: []string{"params.goal", "params.start_url"}},
		{name: "wrapped request error", err: fmt.Errorf("create run: %w", reqErr), wantCode: codes.InvalidArgument, wantFields: []string{"params.goal", "params.start_url"}},
		{name: "unimplemented request error", err: unimpl, wantCode: codes.Unimplemented, wantFields: []string{"params.judge"}},
		{name: "not found", err: fmt.Errorf("run %q: %w", "x", fault.ErrNotFound), wantCode: codes.NotFound},
		{name: "failed precondition", err: fmt.Errorf("run is done: %w", fault.ErrFailedPrecondition), wantCode: codes.FailedPrecondition},
		{name: "unimplemented", err: fmt.Errorf("checkpoints: %w", fault.ErrUnimplemented), wantCode: codes.Unimplemented},
		{name: "unavailable", err: fmt.Errorf("db: %w", fault.ErrUnavailable), wantCode: codes.Unavailable},
		{name: "deadline", err: fmt.Errorf("list runs: %w", context.DeadlineExceeded), wantCode: codes.DeadlineExceeded},
		{name: "canceled", err: context.Canceled, wantCode: codes.Canceled},
		{name: "wrapped canceled", err: fmt.Errorf("list runs: %w", context.Canceled), wantCode: codes.Canceled},
		{name: "unknown error", err: errors.New("connect failed: " + secret), wantCode: codes.Internal, wantLogged: true, notInMessage: secret},
		{name: "status error passes through", err: status.Error(codes.ResourceExhausted, "slow down"), wantCode: codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			err := toStatus(t.Context(), logger, "/wayfinder.v1.RunService/GetRun", tt.err)
			if tt.err == nil {
				require.NoError(t, err)
				return
			}
			st, ok := status.FromError(err)
			require.True(t, ok, "not a status: %v", err)
			require.Equal(t, tt.wantCode, st.Code(), st.Message())

			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, fv := range br.GetFieldViolations() {
						require.NotEmpty(t, fv.GetDescription())
						fields = append(fields, fv.GetField())
					}
				}
			}
			require.Equal(t, tt.wantFields, fields)

			if tt.notInMessage != "" {
				require.NotContains(t, st.Message(), tt.notInMessage)
				require.NotContains(t, st.Message(), "hunter2")
			}
			if tt.wantLogged {
				require.Contains(t, logs.String(), "hunter2", "the internal error is logged")
				require.Contains(t, logs.String(), "/wayfinder.v1.RunService/GetRun")
			} else {
				require.Empty(t, logs.String())
			}
		})
	}
}

func TestIsUUID(t *testing.T) {
	for id, want := range map[string]bool{
		"4f1c2f4e-53a6-4d0b-9a53-1f0d5c4c1e11":          true,
		"4F1C2F4E-53A6-4D0B-9A53-1F0D5C4C1E11":          true,
		"urn:uuid:4f1c2f4e-53a6-4d0b-9a53-1f0d5c4c1e11": false, // Postgres refuses it
		"{4f1c2f4e-53a6-4d0b-9a53-1f0d5c4c1e11}":        false,
		"4f1c2f4e53a64d0b9a531f0d5c4c1e11":              false,
		"":                                              false,
		"run-1":                                         false,
	} {
		if got := isUUID(id); got != want {
			t.Errorf("isUUID(%q) = %v, want %v", id, got, want)
		}
	}
}
