package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// TestMeasureEngine runs the real agent loop on every benchmark page with
// the scripted controller: every run completes, every action succeeds, and
// the figures add up.
func TestMeasureEngine(t *testing.T) {
	t.Parallel()
	site, err := StartSite()
	require.NoError(t, err)
	t.Cleanup(site.Close)
	ctx := context.Background()
	p, err := pool.New(pool.Config{Capacity: 2, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	t.Cleanup(p.Close)
	tok, err := NewTokenizer("")
	require.NoError(t, err)

	const runs, actions = 1, 3
	var logged strings.Builder
	res := measureEngine(ctx, p, site, Pages(), tok, runs, actions, func(f string, a ...any) {
		logged.WriteString(f + "\n")
	})
	require.NotContains(t, logged.String(), "failed")
	require.Len(t, res.Pages, len(Pages()))
	require.Equal(t, engineScreenshotDepth, res.ScreenshotDepth)
	steps, requests := 0, 0
	for _, pg := range res.Pages {
		require.Empty(t, pg.Err, pg.Page.Name)
		// Step 1 opens the page; the last step only completes.
		require.Equal(t, runs*(actions-1), pg.Step.N, pg.Page.Name)
		require.Equal(t, runs*(actions+1), pg.Tokens.Requests, pg.Page.Name)
		require.Greater(t, pg.Step.Median, pg.Model.Median, pg.Page.Name)
		require.GreaterOrEqual(t, pg.Step.Min, pg.Overhead.Min, pg.Page.Name)
		require.Positive(t, pg.Settled.Median, pg.Page.Name)
		require.Positive(t, pg.ResultSnapshot.Median, pg.Page.Name)
		require.Positive(t, pg.Snapshot.Median, pg.Page.Name)

		tk := pg.Tokens
		require.Positive(t, tk.System, pg.Page.Name)
		require.Positive(t, tk.Tools, pg.Page.Name)
		require.Positive(t, tk.Snapshot.Min, pg.Page.Name)
		// The first request shows one screenshot, later ones up to the depth.
		require.InDelta(t, 1, tk.Screenshots.Min, 0, pg.Page.Name)
		require.InDelta(t, engineScreenshotDepth, tk.Screenshots.Max, 0, pg.Page.Name)
		require.InDelta(t, 1280*800/750, tk.Images.Min, 0, pg.Page.Name)
		require.Equal(t, tk.System*tk.Requests, tk.Sum.System, pg.Page.Name)
		require.InDelta(t, tk.Text.Max+tk.Images.Max, tk.Total.Max, 0, pg.Page.Name)
		steps += pg.Step.N
		requests += tk.Requests
	}
	require.Equal(t, steps, res.All.Step.N)
	require.Equal(t, requests, res.All.Tokens.Requests)
}

func TestCountRequest(t *testing.T) {
	t.Parallel()
	tok, err := NewTokenizer("")
	require.NoError(t, err)
	shot := pngOf(t, 750, 4) // 4 tokens
	img := llm.Image{MediaType: "image/png", Data: shot}
	page1 := snapshotOpen + "\npage: \"Form\" http://x/\n@e0 button \"Save\"\n" + snapshotClose
	page2 := snapshotOpen + "\npage: \"Form\" http://x/\n@e0 button \"Saved\"\n" + snapshotClose
	// As the runner encodes tool results: the delimiters not HTML-escaped.
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	require.NoError(t, e.Encode(map[string]any{"success": true, "snapshot": page2}))
	result := bytes.TrimSpace(enc.Bytes())
	call := llm.Call(runner.ToolClick, map[string]any{"ref": "@e0"})
	tools := []llm.Tool{{Name: "t", Description: "a tool", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	defs, err := LLMToolDefinitions(tools)
	require.NoError(t, err)
	require.JSONEq(t, `[{"name":"t","description":"a tool","input_schema":{"type":"object"}}]`, defs)

	req := &llm.Request{System: "You drive a browser.", Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{{Text: "Goal: save"}, {Text: "Current page:\n" + page1}, {Image: &img}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{{ToolCall: &call}}},
		{Role: llm.RoleUser, Parts: []llm.Part{{ToolResult: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: string(result),
			Images: []llm.Image{img}}}, {Image: &img}}},
	}}
	got, err := countRequest(req, tok)
	require.NoError(t, err)
	require.Equal(t, tok.Count(req.System), got.System)
	require.Equal(t, tok.Count(defs), got.Tools)
	span := snapshotSpans(string(result))
	require.Len(t, span, 1)
	require.Equal(t, tok.Count(span[0]), got.Snapshot, "the newest message's snapshot, as the model reads it (JSON)")
	history := tok.Count("Goal: save") + tok.Count("Current page:\n"+page1) + tok.Count(call.Name) + tok.Count(string(call.Arguments)) +
		tok.Count(string(result)) - got.Snapshot
	require.Equal(t, history, got.History)
	require.Equal(t, 3, got.screenshots)
	require.Equal(t, 12, got.Images)
	require.Equal(t, got.text()+12, got.total())

	snap, ok := latestSnapshot(req)
	require.True(t, ok)
	require.Equal(t, page2, snap)

	// Without a snapshot in the newest message the split cannot be made.
	req.Messages = req.Messages[:2]
	_, err = countRequest(req, tok)
	require.ErrorContains(t, err, "no page snapshot")
	_, ok = latestSnapshot(req)
	require.False(t, ok)
}

func TestNextAction(t *testing.T) {
	t.Parallel()
	page := func(lines ...string) *llm.Request {
		text := "Current page:\n" + snapshotOpen + "\npage: \"P\" http://x/\n" + strings.Join(lines, "\n") + "\n" + snapshotClose
		return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: text}}}}}
	}
	target := Target{Role: "button", Name: `Say "hi"`}
	form := page(`@e0 h1 "Sign up"`, `@e1 textbox "Name" disabled`, `@e2 searchbox "Find" = "x"`, `@e3 button "Say \"hi\"" [Row 1]`, `@e4 button "Say \"hi\"" [Row 2]`)
	noFields := page(`@e0 link "Home"`, `@e7 button "Say \"hi\""`)

	tests := []struct {
		name     string
		req      *llm.Request
		i        int
		tool     string
		ref      string
		wantErr  error
		anyError bool
	}{
		{name: "even: click the target, the first of its name", req: form, i: 0, tool: runner.ToolClick, ref: "@e3"},
		{name: "odd: fill the first enabled text field", req: form, i: 1, tool: runner.ToolFill, ref: "@e2"},
		{name: "odd without a text field: click", req: noFields, i: 3, tool: runner.ToolClick, ref: "@e7"},
		{name: "target missing", req: page(`@e0 button "Other"`), i: 0, wantErr: errNoTarget},
		{name: "no snapshot", req: &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: "Goal"}}}}}, anyError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, err := nextAction(tt.req, target, tt.i)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
				return
			case tt.anyError:
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.tool, call.Name)
			var args map[string]any
			require.NoError(t, json.Unmarshal(call.Arguments, &args))
			require.Equal(t, tt.ref, args["ref"])
			require.InDelta(t, 0.9, args["confidence"], 0)
			if tt.tool == runner.ToolFill {
				require.NotEmpty(t, args["value"])
			}
		})
	}
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))))
	return b.Bytes()
}
