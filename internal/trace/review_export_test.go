package trace_test

import (
	"context"
	"go/format"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm/steps"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// hostile is text a page or a model could put into a trace: a Go build
// constraint on a line of its own, a byte order mark, a comment closer,
// quotes, a backquote, a backslash, an escape sequence, a bidi override.
const hostile = "x\n+build ignore\n//go:build ignore\n\ufeff */ ` \" \\ \x1b[31m \u202e %d"

// vetted builds, lists and vets the exported test in a module of its own:
// its one test function must be there (no build constraint keeps the
// file out) and go vet must have nothing to say.
func vetted(t *testing.T, pkg string, src []byte) {
	t.Helper()
	formatted, err := format.Source(src)
	require.NoError(t, err)
	require.Equal(t, string(src), string(formatted), "gofmt-ed")
	m := newRodModule(t)
	m.write(t, pkg, pkg+"_test.go", src)
	out, ok := m.goTest(t, pkg, nil, "-list", ".")
	require.True(t, ok, "%s\n%s", out, src)
	require.Contains(t, out, "TestReview\n", "the test function is built:\n%s\n%s", out, src)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "vet", "./"+pkg)
	cmd.Dir = m.dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	vet, err := cmd.CombinedOutput()
	require.NoError(t, err, "go vet:\n%s\n%s", vet, src)
}

// A hostile goal, start URL, element description or target is quoted in
// the exported test's comments as in its code: no build constraint, no
// character the Go scanner refuses.
func TestReviewExportGoTestHostileComments(t *testing.T) {
	t.Parallel()
	page := trace.Signature{URLPattern: "http://127.0.0.1:1/form"}
	tr := &trace.Trace{Format: trace.FormatVersion, Goal: hostile, StartURL: "http://127.0.0.1:1/form?q=\ufeff",
		Actions: []trace.Action{
			{Step: 1, Tool: "browser_click", Arguments: map[string]any{"target": map[string]any{"css": hostile, "role": hostile}},
				Page: page, URL: "http://127.0.0.1:1/form"},
			{Step: 2, Tool: "browser_click", Arguments: map[string]any{"ref": "@e1"}, Page: page, URL: "http://127.0.0.1:1/form",
				Target: &trace.Fingerprint{Role: hostile, Name: hostile, Tag: "button", Text: hostile, Path: hostile,
					Attrs: map[string]string{"id": hostile, "data-testid": hostile, "name": hostile}}},
			{Step: 3, Tool: "browser_hover", Arguments: map[string]any{"ref": "@e1"}, TargetError: hostile, Page: page},
			{Step: 4, Tool: "browser_wait", Arguments: map[string]any{"text": hostile}, Page: page},
			{Step: 5, Tool: "browser_navigate", Arguments: map[string]any{"url": "http://127.0.0.1:1/" + hostile}, Page: page},
		},
		Final: trace.Final{URL: "http://127.0.0.1:1/done"}}
	src, err := trace.ExportGoTest(tr, "review")
	require.NoError(t, err)
	require.NotContains(t, string(src), "\ufeff")
	require.NotContains(t, string(src), "\x1b")
	require.NotContains(t, string(src), "\u202e")
	vetted(t, "hostile", src)
}

// A secret whose action cannot be replayed (its element was not recorded)
// is not read: a `secret` variable no statement uses would not compile.
func TestReviewExportGoTestUnusedSecret(t *testing.T) {
	t.Parallel()
	page := trace.Signature{URLPattern: "http://127.0.0.1:1/login"}
	tr := &trace.Trace{Format: trace.FormatVersion, Goal: "Log in", StartURL: "http://127.0.0.1:1/login",
		Actions: []trace.Action{
			{Step: 1, Tool: "browser_fill", Arguments: map[string]any{"ref": "@e3", "value": "{{password}}"},
				TargetError: "no DOM details: the element left the page", Page: page},
			{Step: 2, Tool: "browser_navigate", Arguments: map[string]any{"url": "http://127.0.0.1:1/{{token}}"}, Page: page},
		},
		Final: trace.Final{URL: "http://127.0.0.1:1/home"}}
	src, err := trace.ExportGoTest(tr, "review")
	require.NoError(t, err)
	require.NotContains(t, string(src), "secret :=")
	vetted(t, "unused", src)

	// A secret that is typed is read.
	tr.Actions = append(tr.Actions, trace.Action{Step: 3, Tool: "browser_type", Arguments: map[string]any{"text": "{{ Password }}!"}, Page: page})
	src, err = trace.ExportGoTest(tr, "review")
	require.NoError(t, err)
	require.Contains(t, string(src), `secret := secrets(t, "WAYFINDER_SECRET_PASSWORD")`)
	require.Contains(t, string(src), `typeText(t, page, 3, nil, secret["WAYFINDER_SECRET_PASSWORD"]+"!")`)
	require.Equal(t, 1, strings.Count(string(src), "WAYFINDER_SECRET_PASSWORD\")"), "read once")
	vetted(t, "used", src)
}

// Waits the runner took (its arithmetic wraps) do not become constant
// expressions that overflow time.Duration.
func TestReviewExportGoTestHugeWaits(t *testing.T) {
	t.Parallel()
	page := trace.Signature{URLPattern: "http://127.0.0.1:1/form"}
	tr := &trace.Trace{Format: trace.FormatVersion, Goal: "Wait", StartURL: "http://127.0.0.1:1/form",
		Actions: []trace.Action{
			{Step: 1, Tool: "browser_wait", Arguments: map[string]any{"seconds": 1e300}, Page: page},
			{Step: 2, Tool: "browser_wait", Arguments: map[string]any{"text": "Saved", "timeout_ms": 9e18}, Page: page},
		},
		Final: trace.Final{URL: "http://127.0.0.1:1/form"}}
	src, err := trace.ExportGoTest(tr, "review")
	require.NoError(t, err)
	vetted(t, "waits", src)
}

// A URL a step opens reads back whole: the grammar drops a sentence's
// final period, exclamation mark, comma or semicolon outside quotes.
func TestReviewExportStepsOpenURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://x.example/wiki/Inc.", "http://x.example/go!", "http://x.example/a,", "http://x.example/a;", "http://x.example/a.b"} {
		tr := &trace.Trace{Format: trace.FormatVersion, Goal: "g", StartURL: "http://x.example/",
			Actions: []trace.Action{{Step: 1, Tool: "browser_navigate", Arguments: map[string]any{"url": u}}},
			Final:   trace.Final{URL: "http://x.example/done"}}
		out, err := trace.ExportSteps(tr)
		require.NoError(t, err)
		st, err := steps.Parse(out)
		require.NoError(t, err, out)
		require.Len(t, st, 2, out)
		require.Equal(t, steps.Open, st[0].Kind, out)
		require.Equal(t, u, st[0].Target, out)
	}
}

// A step list holds no control or bidi character (the CLI writes it to a
// terminal as it is): an action whose name, value or URL holds one has no
// step.
func TestReviewExportStepsControls(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"\x1b]0;owned\a", "\u009b2J", "\u202eevil", "a\tb"} {
		for _, a := range []trace.Action{
			{Step: 1, Tool: "browser_click", Arguments: map[string]any{"ref": "@e1"}, Target: &trace.Fingerprint{Role: "button", Name: "Save" + bad}},
			{Step: 1, Tool: "browser_fill", Arguments: map[string]any{"ref": "@e1", "value": "v" + bad}, Target: &trace.Fingerprint{Role: "textbox", Name: "Name"}},
			{Step: 1, Tool: "browser_navigate", Arguments: map[string]any{"url": "http://x.example/" + bad}},
		} {
			tr := &trace.Trace{Format: trace.FormatVersion, Goal: "g" + bad, StartURL: "http://x.example/", Actions: []trace.Action{a},
				Final: trace.Final{URL: "http://x.example/done"}}
			out, err := trace.ExportSteps(tr)
			require.ErrorIs(t, err, trace.ErrNotExportable, "%q", out)
		}
	}
}
