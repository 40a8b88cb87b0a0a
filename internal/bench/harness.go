package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errPending marks a measurement whose Wayfinder API has not been built
// yet; the report says so instead of showing a number.
var errPending = errors.New("pending")

// pendingf returns an error wrapping errPending.
func pendingf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errPending, fmt.Sprintf(format, args...))
}

// driver is one side of the comparison, driving one tab.
type driver interface {
	// open navigates the tab to url and waits for it to load.
	open(ctx context.Context, url string) error
	// snapshot returns what the model would read of the page.
	snapshot(ctx context.Context) (string, error)
	// screenshot returns a PNG of the viewport.
	screenshot(ctx context.Context) ([]byte, error)
	// click clicks t, found in the latest snapshot, and returns when the
	// driver considers the page settled.
	click(ctx context.Context, t Target) error
}

// SideResult holds one side's measurements on one page. A Summary with
// N == 0 was not measured; Pending or Err says why.
type SideResult struct {
	// Snapshot, Screenshot and Action are latencies in milliseconds; Step
	// is their sum per iteration.
	Snapshot, Screenshot, Action, Step Summary
	// SnapshotChars and SnapshotTokens are the size of the snapshot text.
	SnapshotChars, SnapshotTokens Summary
	// ScreenshotBytes is the PNG size.
	ScreenshotBytes Summary
	// Pending lists measurements waiting for a Wayfinder API.
	Pending []string
	// Err is the failure that ended the side's run on this page.
	Err string
}

// PageResult is both sides' measurements on one page.
type PageResult struct {
	Page   Page
	Ours   SideResult
	Theirs SideResult
}

// samples accumulates one side's raw measurements on one page.
type samples struct {
	snapshot, screenshot, action, step []time.Duration
	chars, tokens, shotBytes           []int
	pending                            map[string]bool
	err                                error
}

func (s *samples) result() SideResult {
	r := SideResult{
		Snapshot:        SummarizeDurations(s.snapshot),
		Screenshot:      SummarizeDurations(s.screenshot),
		Action:          SummarizeDurations(s.action),
		Step:            SummarizeDurations(s.step),
		SnapshotChars:   SummarizeInts(s.chars),
		SnapshotTokens:  SummarizeInts(s.tokens),
		ScreenshotBytes: SummarizeInts(s.shotBytes),
	}
	for _, what := range []string{"snapshot", "screenshot", "action"} {
		if s.pending[what] {
			r.Pending = append(r.Pending, what)
		}
	}
	if s.err != nil {
		r.Err = s.err.Error()
	}
	return r
}

// iterate runs one step on d: snapshot, find the target, screenshot,
// click. It records measurements only when record is set. A pending API
// skips its measurement (and the click, without a snapshot to find the
// target in); any other error is returned.
func (s *samples) iterate(ctx context.Context, d driver, tok *Tokenizer, t Target, record bool) error {
	var step time.Duration
	complete := true

	start := time.Now()
	text, err := d.snapshot(ctx)
	snapDur := time.Since(start)
	switch {
	case errors.Is(err, errPending):
		s.markPending("snapshot")
		complete = false
	case err != nil:
		return fmt.Errorf("snapshot: %w", err)
	case record:
		s.snapshot = append(s.snapshot, snapDur)
		s.chars = append(s.chars, len([]rune(text)))
		s.tokens = append(s.tokens, tok.Count(text))
	}
	step += snapDur

	start = time.Now()
	png, err := d.screenshot(ctx)
	shotDur := time.Since(start)
	switch {
	case errors.Is(err, errPending):
		s.markPending("screenshot")
		complete = false
	case err != nil:
		return fmt.Errorf("screenshot: %w", err)
	case record:
		s.screenshot = append(s.screenshot, shotDur)
		s.shotBytes = append(s.shotBytes, len(png))
	}
	step += shotDur

	if s.pending["snapshot"] {
		s.markPending("action")
		return nil
	}
	start = time.Now()
	err = d.click(ctx, t)
	clickDur := time.Since(start)
	switch {
	case errors.Is(err, errPending):
		s.markPending("action")
		complete = false
	case err != nil:
		return fmt.Errorf("click %s: %w", t, err)
	case record:
		s.action = append(s.action, clickDur)
	}
	step += clickDur
	if record && complete {
		s.step = append(s.step, step)
	}
	return nil
}

func (s *samples) markPending(what string) {
	if s.pending == nil {
		s.pending = map[string]bool{}
	}
	s.pending[what] = true
}

// runPage measures both sides on page at url: warmup unrecorded
// iterations, then iterations recorded ones. The sides alternate step by
// step (and which goes first alternates too), so a burst of load on the
// machine falls on both alike.
func runPage(ctx context.Context, page Page, url string, ours, theirs driver, tok *Tokenizer, warmup, iterations int) PageResult {
	sides := []driver{ours, theirs}
	acc := []*samples{{}, {}}
	for i, d := range sides {
		if err := d.open(ctx, url); err != nil {
			acc[i].err = fmt.Errorf("open %s: %w", url, err)
		}
	}
	for it := range warmup + iterations {
		for k := range sides {
			i := (k + it) % 2
			if acc[i].err != nil || ctx.Err() != nil {
				continue
			}
			if err := acc[i].iterate(ctx, sides[i], tok, page.Click, it >= warmup); err != nil {
				acc[i].err = fmt.Errorf("iteration %d: %w", it+1, err)
			}
		}
	}
	for _, a := range acc {
		if a.err == nil && ctx.Err() != nil {
			a.err = context.Cause(ctx)
		}
	}
	return PageResult{Page: page, Ours: acc[0].result(), Theirs: acc[1].result()}
}

// playwrightDriver drives Playwright MCP's current tab.
type playwrightDriver struct {
	mcp  *PlaywrightMCP
	last string
}

func (d *playwrightDriver) open(ctx context.Context, url string) error {
	_, err := d.mcp.Navigate(ctx, url)
	return err
}

func (d *playwrightDriver) snapshot(ctx context.Context) (string, error) {
	text, err := d.mcp.Snapshot(ctx)
	d.last = text
	return text, err
}

func (d *playwrightDriver) screenshot(ctx context.Context) ([]byte, error) {
	return d.mcp.Screenshot(ctx)
}

func (d *playwrightDriver) click(ctx context.Context, t Target) error {
	ref, err := FindRef(d.last, t)
	if err != nil {
		return err
	}
	_, err = d.mcp.Click(ctx, ref, t.String())
	return err
}
