package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func measured(median, p95 float64) Summary {
	return Summary{N: 15, Median: median, P95: p95, Min: median / 2, Max: p95}
}

func sampleReport() *Report {
	full := func(tokens, p95, step float64) SideResult {
		return SideResult{
			Snapshot: measured(20, 30), Screenshot: measured(40, 50), Action: measured(100, 120), Step: measured(step, step*1.2),
			SnapshotChars: measured(tokens*3, p95*3), SnapshotTokens: measured(tokens, p95), ScreenshotBytes: measured(51200, 52000),
		}
	}
	return &Report{
		Date:      time.Date(2026, 11, 22, 3, 30, 0, 0, time.UTC),
		Duration:  150 * time.Second,
		Machine:   Machine{CPU: "AMD EPYC", Cores: 2, MemoryBytes: 8 << 30, Go: "go1.26.8", PlaywrightMCP: "0.0.83", Load: "17.20, 18.01, 12.50"},
		Tokenizer: "o200k_base", Iterations: 15, Warmup: 2, Revision: "86d6ac2",
		OursSettle: 300 * time.Millisecond, TheirsSettle: 500 * time.Millisecond,
		Pages: []PageResult{
			{Page: Page{Name: "form", About: "a form", Click: Target{"button", "Save draft"}},
				Ours: full(400, 450, 160), Theirs: full(1200, 1200, 750)},
			{Page: Page{Name: "many", About: "many", Click: Target{"button", "Refresh"}},
				Ours: full(1800, 2100, 300), Theirs: full(99000, 99500, 3000)},
		},
		Tools:   ToolsResult{TheirsCount: 25, TheirsTokens: 3782, TheirsChars: 17631, OursNote: "not yet defined (issue 4)"},
		Pool:    PoolResult{Lease: measured(6, 7)},
		Memory:  MemoryResult{OursBrowser: 392 << 20, OursPerContext: 48 << 20, Contexts: 4, TheirsSession: 602 << 20},
		Startup: StartupResult{OursLaunch: 633 * time.Millisecond, OursFirstLease: 432 * time.Millisecond, TheirsConnect: 1128 * time.Millisecond, TheirsFirstNavigate: 1442 * time.Millisecond},
	}
}

func render(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, RenderMarkdown(&b, r))
	return b.String()
}

func TestRenderMarkdown(t *testing.T) {
	t.Parallel()
	md := render(t, sampleReport())
	for _, want := range []string{
		"# Benchmarks: Wayfinder's page layer beside Playwright MCP, and its agent engine\n",
		"A small machine (2 logical cores) shared with other work while it ran (load average 17.20, 18.01, 12.50 over 1, 5 and 15 minutes as the measurements began): ",
		"on 2026-11-22 03:30 UTC in 2m30s;",
		"| CPU | AMD EPYC, 2 logical cores |",
		"| memory | 8.0 GiB |",
		"| Playwright MCP | @playwright/mcp 0.0.83 |",
		"| Wayfinder revision | 86d6ac2 |",
		"| samples | 15 measured steps per page and side after 2 warm-up steps; median and p95 |",
		"no network, navigation or DOM change for 300 ms.",
		"its default settle timeout of 500 ms after an action",
		// Worst page ratio 400/1200 = 0.33 meets the token target...
		"| median snapshot tokens ≤ ½ of Playwright MCP's on every page | worst ratio 0.33 (form), best 0.02 (many) | **met** |",
		// ...but the many page's p95 is over 2,000.
		"| p95 snapshot tokens ≤ 2,000 on every page | largest p95 2,100 (many) | **not met** |",
		"| step (snapshot + screenshot + click to settled) ≤ ½ of Playwright MCP's, median, every page | worst ratio 0.21 (form), best 0.10 (many) | **met** |",
		"| tool definitions ≤ ½ of Playwright MCP's (3,782 tokens, 25 tools) | not yet defined (issue 4) | pending |",
		"| form | a form | button \"Save draft\" |",
		"| many | 1,800 | 2,100 | 99,000 | 99,500 | 0.02 |",
		"| form | 20.0 | 30.0 | 20.0 | 30.0 | 1.00 |",
		"| form | 50.0 KiB | 50.8 KiB | 50.0 KiB | 50.8 KiB | 1.00 |",
		"| form | 160 | 192 | 750 | 900 | 0.21 |",
		"as between runs), ms | 6.0 / 7.0 |",
		"| memory per open context (each of 4 more, a page on the form) | 48.0 MiB | 602.0 MiB (a whole session: server and browser) |",
		"| start (Wayfinder: launch Chromium; Playwright MCP: start the server, MCP initialize) | 633 ms | 1,128 ms |",
		"| Playwright MCP | 25 tools, 3,782 tokens (17,631 characters) |",
		"## Engine overhead per step\n\nNot measured in this run.\n",
	} {
		require.Contains(t, md, want)
	}
	require.NotContains(t, md, "## Failures")
}

func TestRenderEngine(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Tools = ToolsResult{TheirsCount: 25, TheirsTokens: 3782, OursCount: 17, OursTokens: 3257}
	tokens := EngineTokens{Requests: 9, Text: measured(5000, 5200), Images: measured(4095, 4095), Total: measured(9100, 9300),
		Screenshots: measured(3, 3), Snapshot: measured(430, 440), History: measured(1100, 1300), System: 280, Tools: 3257,
		Sum: TokenSums{System: 1, Tools: 4, Snapshot: 1, History: 1, Images: 3}}
	form := EnginePage{Page: r.Pages[0].Page, Step: measured(300, 400), Overhead: measured(299.8, 399.8),
		Settled: measured(180, 190), ResultSnapshot: measured(20, 30), Snapshot: measured(90, 100), Judge: measured(0.012, 0.02),
		Model: measured(0.2, 0.3), Conversation: measured(0.07, 0.1), Rest: measured(0.15, 0.2), Tokens: tokens}
	all := form
	all.Page = Page{Name: allPages}
	all.Tokens.Total = Summary{N: 9, Median: 9100, Max: 16000}
	r.Engine = EngineResult{Runs: 3, Actions: 8, ScreenshotDepth: 3, All: all, Pages: []EnginePage{
		form, {Page: r.Pages[1].Page, Err: "run 1: the run ended error: llm_error: script exhausted"}}}
	md := render(t, r)
	for _, want := range []string{
		"| tool definitions ≤ ½ of Playwright MCP's (3,782 tokens, 25 tools) | 3,257 tokens (0.86) | **not met** |",
		"| Wayfinder | 17 tools, 3,257 tokens |",
		"3 runs (after one unrecorded warm-up run)",
		"each of 8 browser actions",
		"the controller sees 3 screenshots",
		// The page-layer step of the comparison is shown beside.
		"| form | 15 | 300 | 400 | 300 | 400 | 160 |",
		"| many | 0 | failed | failed | failed | failed | 300 |",
		"| **all pages** | 15 | 300 | 400 | 300 | 400 | — |",
		"| form | 180 | 20.0 | 90.0 | 0.01 | 0.20 | 0.07 | 0.15 |",
		"| form | 9 | 5,000 | 5,200 | 4,095 (3) | 9,100 | 9,300 | 430 | 1,100 |",
		"| form | 10% | 40% | 10% | 10% | 30% |",
		"| many | — | — | — | — | — |",
		"| system prompt | 500 | 1,000 | 280 | **met** |",
		"| total per turn (text and screenshots), median request | 8,000 | 15,000 | 9,100 | over target, within the limit |",
		"| total per turn (text and screenshots), largest request | 8,000 | 15,000 | 16,000 | **not met** |",
		"- many: engine: run 1: the run ended error: llm_error: script exhausted\n",
	} {
		require.Contains(t, md, want)
	}
	require.Len(t, r.Failures(), 1)
}

func TestRenderMarkdownPendingAndFailures(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Pages[0].Ours = SideResult{Screenshot: measured(40, 50), ScreenshotBytes: measured(51200, 52000), Pending: []string{"snapshot", "action"}}
	r.Pages[1].Theirs = SideResult{Err: "iteration 3: snapshot: playwright mcp: browser_snapshot: EOF"}
	r.Tools = ToolsResult{TheirsCount: 25, TheirsTokens: 4000, OursCount: 9, OursTokens: 1500}
	r.Memory = MemoryResult{}
	r.Pages = append(r.Pages, PageResult{Page: Page{Name: "table"}, Ours: r.Pages[1].Ours, Theirs: r.Pages[1].Ours})
	r.Errors = []string{"memory: Wayfinder's browser process not found"}
	md := render(t, r)
	for _, want := range []string{
		// The token target cannot be judged while a page is pending.
		// One page of three has both sides measured: no verdict yet.
		"| median snapshot tokens ≤ ½ of Playwright MCP's on every page | ratio 1.00 (table); 1 of 3 pages measured | pending |",
		"| p95 snapshot tokens ≤ 2,000 on every page | largest p95 2,100 (many) | pending |",
		"| tool definitions ≤ ½ of Playwright MCP's (4,000 tokens, 25 tools) | 1,500 tokens (0.38) | **met** |",
		"| form | pending | pending | 1,200 | 1,200 | — |", // tokens
		"| form | 40.0 | 50.0 | 40.0 | 50.0 | 1.00 |",      // screenshot measured
		"| many | 1,800 | 2,100 | failed | failed | — |",
		"| memory per open context | not measured | not measured |",
		"## Failures\n\n- many: playwright mcp: iteration 3: snapshot: playwright mcp: browser_snapshot: EOF\n- memory: Wayfinder's browser process not found\n",
	} {
		require.Contains(t, md, want)
	}
	require.Len(t, r.Failures(), 2)
}

func TestFormatting(t *testing.T) {
	t.Parallel()
	tests := []struct{ got, want string }{
		{thousands(0), "0"},
		{thousands(999.4), "999"},
		{thousands(1000), "1,000"},
		{thousands(1234567), "1,234,567"},
		{thousands(-4321), "-4,321"},
		{millis(3.14159), "3.1"},
		{millis(1234.5), "1,235"},
		{bytesIEC(0), "—"},
		{bytesIEC(512), "512 B"},
		{bytesIEC(1536), "1.5 KiB"},
		{bytesIEC(-3 << 20), "-3.0 MiB"},
		{durationMillis(0), "—"},
		{durationMillis(1500 * time.Millisecond), "1,500 ms"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.got)
	}
}
