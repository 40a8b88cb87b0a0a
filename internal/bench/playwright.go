package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// playwrightSettle is Playwright MCP's default wait after an action for
// the work it triggered (--timeout-settle), which the benchmark keeps.
const playwrightSettle = 500 * time.Millisecond

// PlaywrightConfig says how to start Microsoft's Playwright MCP server.
type PlaywrightConfig struct {
	// Node is the Node.js binary. Default "node" on PATH.
	Node string
	// CLI is the server's entry point, node_modules/@playwright/mcp/cli.js
	// of a pinned npm install. Required.
	CLI string
	// Chromium is the browser binary the server drives (--executable-path):
	// the system Chromium, never one Playwright downloads. Required.
	Chromium string
	// WorkDir is the server's working directory (its workspace root) and
	// output directory for the files it writes. Required.
	WorkDir string
	// Width and Height are the viewport in CSS pixels. Default 1280x800,
	// the same as Wayfinder's pages.
	Width, Height int
	// Stderr receives the server's log. Default: discarded.
	Stderr io.Writer
}

// args returns the server's command line: headless, the system Chromium,
// an in-memory profile, and no sandbox when running as root (Chromium
// refuses to start otherwise), as Wayfinder runs its own.
func (c PlaywrightConfig) args() []string {
	w, h := c.Width, c.Height
	if w == 0 || h == 0 {
		w, h = 1280, 800
	}
	args := []string{c.CLI,
		"--headless",
		"--browser", "chromium",
		"--executable-path", c.Chromium,
		"--isolated",
		"--viewport-size", fmt.Sprintf("%dx%d", w, h),
		"--output-dir", c.WorkDir,
		"--image-responses", "allow",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	return args
}

// PlaywrightMCP is a client session with a Playwright MCP server process,
// over stdio.
type PlaywrightMCP struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
}

// StartPlaywrightMCP starts the server and initializes an MCP session
// (initialize, initialized). The browser starts on the first tool call.
func StartPlaywrightMCP(ctx context.Context, cfg PlaywrightConfig) (*PlaywrightMCP, error) {
	if cfg.CLI == "" || cfg.Chromium == "" || cfg.WorkDir == "" {
		return nil, errors.New("playwright mcp: CLI, Chromium and WorkDir are required")
	}
	if _, err := os.Stat(cfg.CLI); err != nil {
		return nil, fmt.Errorf("playwright mcp: %w (run `make bench`, which installs it)", err)
	}
	node := cfg.Node
	if node == "" {
		node = "node"
	}
	cmd := exec.Command(node, cfg.args()...)
	cmd.Dir = cfg.WorkDir
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	cmd.Stderr = cfg.Stderr
	// Its own process group, so Close reaches the browser it launched;
	// and killed with us should we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	client := mcp.NewClient(&mcp.Implementation{Name: "wfbench", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		return nil, fmt.Errorf("playwright mcp: connect: %w", err)
	}
	return &PlaywrightMCP{cmd: cmd, session: session}, nil
}

// newPlaywrightMCP wraps an existing session (tests use an in-memory one).
func newPlaywrightMCP(session *mcp.ClientSession) *PlaywrightMCP {
	return &PlaywrightMCP{session: session}
}

// ServerVersion is the version the server reported in initialize.
func (p *PlaywrightMCP) ServerVersion() string {
	if r := p.session.InitializeResult(); r != nil && r.ServerInfo != nil {
		return r.ServerInfo.Version
	}
	return ""
}

// PackageVersion returns the version of the npm package whose entry point
// is cli (its package.json beside it); "" when unreadable.
func PackageVersion(cli string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cli), "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	return pkg.Version
}

// Pid is the server's process ID (its process group's too).
func (p *PlaywrightMCP) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Tools lists the tool definitions the server offers a model.
func (p *PlaywrightMCP) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range p.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("playwright mcp: tools/list: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// Navigate opens url in the current tab (launching the browser on first use).
func (p *PlaywrightMCP) Navigate(ctx context.Context, url string) (string, error) {
	res, err := p.call(ctx, "browser_navigate", map[string]any{"url": url})
	if err != nil {
		return "", err
	}
	return resultText(res), nil
}

// Snapshot returns the text of browser_snapshot's response: what the model
// reads (page header, the aria-YAML snapshot, events).
func (p *PlaywrightMCP) Snapshot(ctx context.Context) (string, error) {
	res, err := p.call(ctx, "browser_snapshot", map[string]any{})
	if err != nil {
		return "", err
	}
	return resultText(res), nil
}

// Screenshot takes a PNG of the viewport and returns the image the
// response carries.
func (p *PlaywrightMCP) Screenshot(ctx context.Context) ([]byte, error) {
	res, err := p.call(ctx, "browser_take_screenshot", map[string]any{"type": "png"})
	if err != nil {
		return nil, err
	}
	img, _, err := resultImage(res)
	return img, err
}

// Click clicks the element of ref (from the latest snapshot) and returns
// the response text once the server considers the page settled.
func (p *PlaywrightMCP) Click(ctx context.Context, ref, element string) (string, error) {
	res, err := p.call(ctx, "browser_click", map[string]any{"target": ref, "element": element})
	if err != nil {
		return "", err
	}
	return resultText(res), nil
}

// Close ends the session: the server closes its browser and exits when its
// stdin closes. Whatever of its process tree still runs then is killed; the
// tree is taken first, because Playwright starts the browser in a session
// of its own, which the server's exit orphans.
func (p *PlaywrightMCP) Close() error {
	var procs []procInfo
	if pid := p.Pid(); pid != 0 {
		procs = descendants(pid)
	}
	err := p.session.Close()
	killSurvivors(procs)
	return err
}

func (p *PlaywrightMCP) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("playwright mcp: %s: %w", tool, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("playwright mcp: %s failed: %s", tool, strings.TrimSpace(resultText(res)))
	}
	return res, nil
}

// resultText joins the text parts of a tool result, as a client shows
// them to the model.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultImage returns the first image of a tool result.
func resultImage(res *mcp.CallToolResult) (data []byte, mimeType string, err error) {
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			return img.Data, img.MIMEType, nil
		}
	}
	return nil, "", errors.New("playwright mcp: the response carries no image")
}

// ToolDefinitions renders tools as a model API receives them: name,
// description and input schema of each, as JSON. Titles and annotations
// are for clients, not sent to models, so they are not counted.
func ToolDefinitions(tools []*mcp.Tool) (string, error) {
	type def struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"input_schema"`
	}
	defs := make([]def, len(tools))
	for i, t := range tools {
		defs[i] = def{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return "", fmt.Errorf("render tool definitions: %w", err)
	}
	return string(b), nil
}

// snapshotLine matches one node of a Playwright aria snapshot:
// `- role "name" [attr] [ref=e12]` with an optional trailing colon.
var snapshotLine = regexp.MustCompile(`^\s*- ([a-zA-Z]+)(?: ("(?:[^"\\]|\\.)*"))?((?: \[[^\]]*\])*):?(?: .*)?$`)

var refAttr = regexp.MustCompile(`\[ref=([^\]]+)\]`)

// FindRef returns the ref of the first node of snapshot (Playwright's
// aria-YAML) with t's role and exact name.
func FindRef(snapshot string, t Target) (string, error) {
	for line := range strings.Lines(snapshot) {
		line = strings.TrimRight(line, "\r\n")
		// A node whose key needs YAML quoting is written '- 'key'' with
		// single quotes doubled.
		if i := strings.Index(line, "- '"); i >= 0 && strings.TrimSpace(line[:i]) == "" {
			key := strings.TrimSuffix(strings.TrimSuffix(line[i+3:], ":"), "'")
			line = line[:i] + "- " + strings.ReplaceAll(key, "''", "'")
		}
		m := snapshotLine.FindStringSubmatch(line)
		if m == nil || m[1] != t.Role || m[2] == "" {
			continue
		}
		name, err := strconv.Unquote(m[2])
		if err != nil || name != t.Name {
			continue
		}
		if r := refAttr.FindStringSubmatch(m[3]); r != nil {
			return r[1], nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNoTarget, t)
}
