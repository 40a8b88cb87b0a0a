package worker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/runner"
)

const password = "hunter2-correct-horse"

func testRedactor() *runner.Redactor {
	return runner.NewRedactor([]runner.Secret{{Name: "password", Value: password, Domains: []string{"*"}}}, []string{"tok-abcdef"})
}

func TestRedactProto(t *testing.T) {
	t.Parallel()
	args, err := structpb.NewStruct(map[string]any{
		"value":  "x " + password,
		"nested": map[string]any{"list": []any{password, 1.0, true}},
		password: "a key",
	})
	require.NoError(t, err)
	step := &wfv1.Step{
		Reasoning: "typing " + password,
		Url:       "https://example.com/?pw=" + url.QueryEscape(password),
		Actions:   []*wfv1.Action{{Tool: "browser_fill", Arguments: args, Message: "Bearer tok-abcdef"}},
		Error:     &wfv1.RunError{Message: password},
		BlockedRequests: []*wfv1.BlockedRequest{{
			Url: "https://evil.test/collect?d=" + url.QueryEscape(password), Host: "evil.test",
		}},
	}
	redactProto(testRedactor(), step)
	out, err := protojson.Marshal(step)
	require.NoError(t, err)
	require.NotContains(t, string(out), password)
	require.NotContains(t, string(out), url.QueryEscape(password))
	require.NotContains(t, string(out), "tok-abcdef")
	require.Equal(t, "typing {{password}}", step.Reasoning)
	require.Equal(t, "https://evil.test/collect?d={{password}}", step.BlockedRequests[0].Url)
	require.Equal(t, "Bearer [redacted]", step.Actions[0].Message)
	require.Equal(t, "a key", step.Actions[0].Arguments.Fields["{{password}}"].GetStringValue())
	require.Equal(t, "{{password}}", step.Actions[0].Arguments.Fields["nested"].GetStructValue().Fields["list"].GetListValue().Values[0].GetStringValue())

	// A map field, and nil messages.
	wh := &wfv1.WebhookTool{Headers: map[string]string{"Authorization": "Bearer tok-abcdef", password: "v"}}
	redactProto(testRedactor(), wh)
	require.Equal(t, map[string]string{"Authorization": "Bearer [redacted]", "{{password}}": "v"}, wh.Headers)
	var none *wfv1.RunError
	redactProto(testRedactor(), none)
	redactProto(nil, step)
}

func TestRedactLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := redactLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), testRedactor())
	require.Same(t, log, redactLogger(log, testRedactor()), "wrapped once")
	log = log.With("header", "Bearer tok-abcdef").WithGroup("g")
	log.Info("typed "+password, "value", password, "err", errors.New("failed: "+password),
		slog.Group("inner", "v", password), "any", struct{ V string }{password}, "n", 3)
	require.NotContains(t, buf.String(), password)
	require.NotContains(t, buf.String(), "tok-abcdef")
	require.Contains(t, buf.String(), `msg="typed {{password}}"`)
	require.Contains(t, buf.String(), `g.err="failed: {{password}}"`)
	require.Contains(t, buf.String(), `g.inner.v={{password}}`)
	require.Contains(t, buf.String(), `g.n=3`)

	plain := slog.New(slog.NewTextHandler(&buf, nil))
	require.Same(t, plain, redactLogger(plain, runner.NewRedactor(nil, nil)), "nothing to redact")
}

func TestSinkOutcomeRedacted(t *testing.T) {
	t.Parallel()
	s := &sink{redact: testRedactor()}
	o, err := s.outcome(context.Background(), runner.Result{
		Status:   runner.StatusFailed,
		Err:      &runner.Error{Category: runner.CategoryAuthentication, Message: "login with " + password + " failed"},
		FinalURL: "https://example.com/?p=" + url.QueryEscape(password),
		Reason:   password,
		Verdict:  &judge.Verdict{Failed: true, Reason: "saw " + password},
	})
	require.NoError(t, err)
	require.Equal(t, "login with {{password}} failed", o.Error.Message)
	require.Equal(t, "https://example.com/?p={{password}}", o.FinalURL)
	require.Equal(t, "{{password}}", o.Summary)
	require.Equal(t, "saw {{password}}", o.Verdict.Reason)
}

// TestLateRedactingLogger: a run's logger made before its secrets are
// known redacts them, in messages and in attributes added with With,
// once the redactor is set.
func TestLateRedactingLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var ref atomic.Pointer[runner.Redactor]
	log := lateRedactingLogger(slog.New(slog.NewJSONHandler(&buf, nil)), &ref).With("url", "https://x.test/?p="+password)
	log.Info("before: nothing known", "note", "plain")
	require.Contains(t, buf.String(), "plain")
	ref.Store(testRedactor())
	log.Info("typed "+password, "err", errors.New("bad token tok-abcdef"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	out := lines[1]
	require.NotContains(t, out, password)
	require.NotContains(t, out, "tok-abcdef")
	require.Contains(t, out, "{{password}}")
	require.Contains(t, out, "[redacted]")
}
