package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

func TestWithFlatParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *wfv1.RunAndWaitRequest
		want *wfv1.RunAndWaitRequest
	}{
		{
			name: "every key from strings",
			req: &wfv1.RunAndWaitRequest{FlatParams: map[string]string{
				"goal": " find the price ", "start_url": "https://example.com/",
				"allowed_domains": "example.com, *.example.com,,", "blocked_domains": "ads.example.com",
				"max_steps": "12", "headless": "TRUE", "timeout": "90s", "run_timeout": "120",
				"controller_provider": "openai", "controller_model": "gpt-4.1", "controller_base_url": "http://127.0.0.1:9/v1",
				"judge_strategy": "Heuristic", "judge_provider": "anthropic", "judge_model": "claude",
				"screenshot_history_depth": "0", "max_tokens": "5000", "max_cost_usd": "0.5", "min_confidence": "0",
				"actions_per_turn": "2", "viewport": "1024x768", "locale": "en-GB", "timezone": "Europe/Berlin",
				"profile": "shop", "respect_robots_txt": "yes", "labels": "team=qa, ci = 1", "request_id": "r-1",
			}},
			want: &wfv1.RunAndWaitRequest{
				RequestId: "r-1", Timeout: durationpb.New(90 * time.Second),
				Params: &wfv1.RunParams{
					Goal: "find the price", StartUrl: "https://example.com/",
					AllowedDomains: []string{"example.com", "*.example.com"}, BlockedDomains: []string{"ads.example.com"},
					MaxSteps: 12, Headless: proto.Bool(true), ScreenshotHistoryDepth: proto.Int32(0),
					Controller: &wfv1.ModelSettings{Provider: "openai", Model: "gpt-4.1", BaseUrl: "http://127.0.0.1:9/v1"},
					Judge: &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC,
						Model: &wfv1.ModelSettings{Provider: "anthropic", Model: "claude"}},
					MaxTokens: 5000, MaxCostUsd: 0.5, MinConfidence: proto.Float64(0), ActionsPerTurn: 2,
					Browser: &wfv1.BrowserConfig{Viewport: &wfv1.Viewport{Width: 1024, Height: 768}, Locale: "en-GB",
						Timezone: "Europe/Berlin", Profile: "shop", RunTimeout: durationpb.New(2 * time.Minute)},
					Governance: &wfv1.GovernanceConfig{RespectRobotsTxt: true},
					Labels:     map[string]string{"team": "qa", "ci": "1"},
				},
			},
		},
		{
			name: "typed fields win; flat fills the rest",
			req: &wfv1.RunAndWaitRequest{
				Params: &wfv1.RunParams{Goal: "typed goal", AllowedDomains: []string{"a.example"}, MaxSteps: 3,
					Headless: proto.Bool(true), Labels: map[string]string{"team": "typed"}},
				RequestId: "typed", Timeout: durationpb.New(time.Minute),
				FlatParams: map[string]string{"goal": "flat goal", "start_url": "https://b.example/",
					"allowed_domains": "b.example", "max_steps": "9", "headless": "false", "labels": "team=flat,env=ci",
					"request_id": "flat", "timeout": "5s"},
			},
			want: &wfv1.RunAndWaitRequest{
				Params: &wfv1.RunParams{Goal: "typed goal", StartUrl: "https://b.example/", AllowedDomains: []string{"a.example"},
					MaxSteps: 3, Headless: proto.Bool(true), Labels: map[string]string{"team": "typed", "env": "ci"}},
				RequestId: "typed", Timeout: durationpb.New(time.Minute),
			},
		},
		{
			name: "blank values are unset, whatever the key's type",
			req: &wfv1.RunAndWaitRequest{FlatParams: map[string]string{"goal": "g", "start_url": "https://a.example/",
				"max_steps": "", "headless": " ", "timeout": "", "allowed_domains": "", "viewport": ""}},
			want: &wfv1.RunAndWaitRequest{Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://a.example/"}},
		},
		{
			name: "no flat params leaves the request alone",
			req:  &wfv1.RunAndWaitRequest{Params: &wfv1.RunParams{Goal: "g"}, RequestId: "x"},
			want: &wfv1.RunAndWaitRequest{Params: &wfv1.RunParams{Goal: "g"}, RequestId: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := proto.Clone(tt.req)
			got, err := withFlatParams(tt.req)
			require.NoError(t, err)
			require.True(t, proto.Equal(tt.want, got), "merged request:\nwant %s\ngot  %s",
				prototext.Format(tt.want), prototext.Format(got))
			require.True(t, proto.Equal(before, tt.req), "the caller's request was modified")
		})
	}
}

func TestWithFlatParamsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flat map[string]string
		// want maps each violated field to a fragment of its description.
		want map[string]string
	}{
		{map[string]string{"max_steps": "ten"}, map[string]string{"flat_params.max_steps": "must be an integer"}},
		{map[string]string{"headless": "maybe"}, map[string]string{"flat_params.headless": "true or false"}},
		{map[string]string{"timeout": "soon"}, map[string]string{"flat_params.timeout": "duration"}},
		{map[string]string{"run_timeout": "-5m"}, map[string]string{"flat_params.run_timeout": "duration"}},
		{map[string]string{"judge_strategy": "vibes"}, map[string]string{"flat_params.judge_strategy": "hybrid, llm, heuristic"}},
		{map[string]string{"viewport": "wide"}, map[string]string{"flat_params.viewport": "WIDTHxHEIGHT"}},
		{map[string]string{"labels": "team"}, map[string]string{"flat_params.labels": "key=value"}},
		{map[string]string{"max_cost_usd": "a dollar"}, map[string]string{"flat_params.max_cost_usd": "a number"}},
		{map[string]string{"max_tokens": "1e3"}, map[string]string{"flat_params.max_tokens": "an integer"}},
		{map[string]string{"url": "https://example.com/"}, map[string]string{"flat_params.url": "unknown parameter; known: actions_per_turn"}},
		{
			map[string]string{"max_steps": "x", "screenshot_history_depth": "y", "goal": "fine"},
			map[string]string{"flat_params.max_steps": "integer", "flat_params.screenshot_history_depth": "integer"},
		},
	}
	for _, tt := range tests {
		t.Run(firstKey(tt.want), func(t *testing.T) {
			t.Parallel()
			_, err := withFlatParams(&wfv1.RunAndWaitRequest{FlatParams: tt.flat})
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			var reqErr *fault.RequestError
			require.True(t, errors.As(err, &reqErr))
			got := map[string]string{}
			for _, v := range reqErr.Violations {
				got[v.Field] = v.Description
			}
			require.Len(t, got, len(tt.want), "violations: %v", got)
			for field, frag := range tt.want {
				require.Contains(t, got[field], frag, "field %s", field)
			}
		})
	}
}

// TestRunAndWaitFlatParamsRefused checks that RunAndWait refuses bad flat
// values before it creates anything (the service has no store: reaching
// it would panic).
func TestRunAndWaitFlatParamsRefused(t *testing.T) {
	t.Parallel()
	s := NewRunService(Config{})
	_, err := s.RunAndWait(context.Background(), &wfv1.RunAndWaitRequest{
		FlatParams: map[string]string{"goal": "g", "start_url": "https://example.com/", "max_steps": "lots"},
	})
	require.Equal(t, []string{"flat_params.max_steps"}, violationFields(t, err))
}

// TestRunAndWaitFlatParamsValidated checks that merged flat values go
// through the same validation as typed ones (a goal-less run is refused
// as params.goal, before the store is touched).
func TestRunAndWaitFlatParamsValidated(t *testing.T) {
	t.Parallel()
	s := NewRunService(Config{MaxRunTimeout: testMaxRunTimeout})
	_, err := s.RunAndWait(context.Background(), &wfv1.RunAndWaitRequest{
		FlatParams: map[string]string{"start_url": "ftp://example.com/", "max_steps": "9000"},
	})
	require.ElementsMatch(t, []string{"params.goal", "params.start_url", "params.max_steps"}, dedupe(violationFields(t, err)))
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}
