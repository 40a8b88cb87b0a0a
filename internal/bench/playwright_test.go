package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// transcriptFile is a real session with @playwright/mcp 0.0.83 on
// iframes.html, recorded with mcp.LoggingTransport: initialize,
// tools/list, browser_navigate, browser_snapshot, browser_take_screenshot,
// browser_click on f1e5 and browser_click on an unknown ref.
const transcriptFile = "testdata/playwright-mcp-transcript.log"

// replay answers an MCP client from a recorded transcript: each request
// gets the recorded response to the next recorded request of the same
// method (and tool), under the live request's ID.
type replay struct {
	mu        sync.Mutex
	responses map[string][]map[string]any
}

func loadReplay(t *testing.T, path string) *replay {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	requests := map[string]string{} // recorded request ID → key
	var order []string
	byID := map[string]map[string]any{}
	for line := range strings.Lines(string(raw)) {
		dir, body, ok := strings.Cut(strings.TrimSpace(line), ": ")
		require.True(t, ok, "transcript line %q", line)
		var msg map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &msg))
		id, hasID := msg["id"]
		_, hasMethod := msg["method"]
		switch {
		case dir == "write" && hasID && hasMethod: // a client request
			k := fmt.Sprint(id)
			requests[k] = requestKey(msg)
			order = append(order, k)
		case dir == "read" && hasID && !hasMethod: // a server response
			byID[fmt.Sprint(id)] = msg
		}
	}
	r := &replay{responses: map[string][]map[string]any{}}
	for _, id := range order {
		if resp, ok := byID[id]; ok {
			r.responses[requests[id]] = append(r.responses[requests[id]], resp)
		}
	}
	return r
}

func requestKey(msg map[string]any) string {
	key := fmt.Sprint(msg["method"])
	if params, ok := msg["params"].(map[string]any); ok && key == "tools/call" {
		key += "/" + fmt.Sprint(params["name"])
	}
	return key
}

// serve reads the client's messages from in and writes responses to out
// until in ends.
func (r *replay) serve(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return err
		}
		id, hasID := msg["id"]
		if _, hasMethod := msg["method"]; !hasID || !hasMethod {
			continue // a notification, or the client answering the server
		}
		key := requestKey(msg)
		r.mu.Lock()
		queue := r.responses[key]
		if len(queue) == 0 {
			r.mu.Unlock()
			return fmt.Errorf("transcript has no (more) responses to %s", key)
		}
		resp := queue[0]
		r.responses[key] = queue[1:]
		r.mu.Unlock()
		live := map[string]any{}
		for k, v := range resp {
			live[k] = v
		}
		live["id"] = id
		b, err := json.Marshal(live)
		if err != nil {
			return err
		}
		if _, err := out.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// replayClient returns a PlaywrightMCP connected to a replay of the
// recorded transcript.
func replayClient(t *testing.T) *PlaywrightMCP {
	t.Helper()
	r := loadReplay(t, transcriptFile)
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := r.serve(toServerR, toClientW)
		toClientW.Close()
		done <- err
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "wfbench", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: toClientR, Writer: toServerW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Closing the session closes both pipes; the replay then ends at
		// the end of its input or on a closed pipe, never on a bad message.
		_ = session.Close()
		if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
			require.NoError(t, err)
		}
	})
	return newPlaywrightMCP(session)
}

func TestPlaywrightMCPTranscript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := replayClient(t)
	require.Equal(t, "1.64.0-alpha-1790635538000", p.ServerVersion())

	tools, err := p.Tools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 25)
	defs, err := ToolDefinitions(tools)
	require.NoError(t, err)
	var parsed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(defs), &parsed))
	require.Len(t, parsed, 25)
	for _, d := range parsed {
		require.ElementsMatch(t, []string{"name", "description", "input_schema"}, keys(d), "tool %v", d["name"])
	}
	require.Contains(t, defs, `"name":"browser_click"`)
	require.NotContains(t, defs, "annotations")

	text, err := p.Navigate(ctx, "http://127.0.0.1:44853/iframes.html")
	require.NoError(t, err)
	require.Contains(t, text, "- Page Title: Checkout")

	snap, err := p.Snapshot(ctx)
	require.NoError(t, err)
	require.Contains(t, snap, "```yaml\n- generic [active] [ref=e1]:")
	for target, want := range map[Target]string{
		{Role: "button", Name: "Sign in"}:          "f1e10", // same-origin frame
		{Role: "button", Name: "Pay $240.00"}:      "f2e12", // cross-origin frame
		{Role: "textbox", Name: "Email"}:           "f1e5",
		{Role: "heading", Name: "Checkout"}:        "e6", // attributes before the ref
		{Role: "link", Name: "Cart"}:               "e3", // a node with children
		{Role: "button", Name: "Back to shipping"}: "e10",
	} {
		ref, err := FindRef(snap, target)
		require.NoError(t, err, "%s", target)
		require.Equal(t, want, ref, "%s", target)
	}
	_, err = FindRef(snap, Target{Role: "button", Name: "Sign"})
	require.ErrorIs(t, err, errNoTarget)

	png, err := p.Screenshot(ctx)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(png[:4]))

	clicked, err := p.Click(ctx, "f1e5", `textbox "Email"`)
	require.NoError(t, err)
	require.Contains(t, clicked, "getByRole('textbox', { name: 'Email' }).click()")

	_, err = p.Click(ctx, "e999", "gone")
	require.ErrorContains(t, err, "browser_click failed")
	require.ErrorContains(t, err, "Ref e999 not found")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFindRef(t *testing.T) {
	t.Parallel()
	snap := strings.Join([]string{
		"- generic [ref=e1]:",
		`  - button "Delete" [ref=e2]`,
		`  - button "Delete" [active] [ref=e3] [cursor=pointer]`,
		`  - link "Say \"hi\"" [ref=e4] [cursor=pointer]:`,
		`    - /url: /hi`,
		`  - 'button "It''s: here" [ref=e5]'`,
		`  - button [ref=e6]`,
		`  - text: button "Fake" [ref=e7]`,
		`  - checkbox "Remember me" [checked] [ref=e8]`,
		`  - row "Order 1 Edit" [ref=e9]:`,
		`    - cell "Edit" [ref=e10]:`,
		`      - button "Edit" [ref=e11]`,
	}, "\n")
	tests := []struct {
		target  Target
		want    string
		wantErr bool
	}{
		{Target{"button", "Delete"}, "e2", false}, // the first of identical controls
		{Target{"link", `Say "hi"`}, "e4", false},
		{Target{"button", "It's: here"}, "e5", false},
		{Target{"checkbox", "Remember me"}, "e8", false},
		{Target{"button", "Edit"}, "e11", false}, // the role must match, not just the name
		{Target{"button", "Fake"}, "", true},     // text content is not a node
		{Target{"button", ""}, "", true},         // unnamed nodes are not targets
		{Target{"link", "Delete"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.target.String(), func(t *testing.T) {
			t.Parallel()
			got, err := FindRef(snap, tt.target)
			if tt.wantErr {
				require.ErrorIs(t, err, errNoTarget)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResultParts(t *testing.T) {
	t.Parallel()
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "### Result"},
		&mcp.ImageContent{Data: []byte("\x89PNG..."), MIMEType: "image/png"},
		&mcp.TextContent{Text: "- done"},
	}}
	require.Equal(t, "### Result\n- done", resultText(res))
	img, mime, err := resultImage(res)
	require.NoError(t, err)
	require.Equal(t, "image/png", mime)
	require.True(t, bytes.HasPrefix(img, []byte("\x89PNG")))

	_, _, err = resultImage(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no image"}}})
	require.Error(t, err)
}

func TestPlaywrightArgs(t *testing.T) {
	t.Parallel()
	args := PlaywrightConfig{CLI: "/x/cli.js", Chromium: "/usr/bin/chromium", WorkDir: "/w"}.args()
	joined := strings.Join(args, " ")
	require.Equal(t, "/x/cli.js", args[0])
	for _, want := range []string{"--headless", "--executable-path /usr/bin/chromium", "--isolated", "--viewport-size 1280x800", "--output-dir /w"} {
		require.Contains(t, joined, want)
	}
	require.Equal(t, os.Geteuid() == 0, strings.Contains(joined, "--no-sandbox"))
}

func TestPackageVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/package.json", []byte(`{"name":"@playwright/mcp","version":"0.0.83"}`), 0o644))
	require.Equal(t, "0.0.83", PackageVersion(dir+"/cli.js"))
	require.Empty(t, PackageVersion(t.TempDir()+"/cli.js"))
}
