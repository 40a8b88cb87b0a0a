package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/suite"
)

// stderrIsTerminal reports whether the environment's stderr is a terminal.
func stderrIsTerminal(env Env) bool {
	f, ok := env.Stderr.(*os.File)
	return ok && isTTY(f)
}

// seenTest is what a suiteDisplay last showed of a test.
type seenTest struct {
	outcome  wfv1.TestOutcome
	attempts int
}

// suiteDisplay shows a suite run's tests as they change: a line when a
// test starts, retries and ends. On a terminal the symbols are coloured
// and a live status line under them counts the tests.
type suiteDisplay struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	width int
	now   func() time.Time

	seen    map[string]seenTest
	nameCol int
	last    *wfv1.SuiteRun
	shown   bool // the live line is on screen
	ticking sync.WaitGroup
	stopped chan struct{}
}

func newSuiteDisplay(w io.Writer, live bool, columns string) *suiteDisplay {
	width := 80
	if n, err := strconv.Atoi(columns); err == nil && n >= 20 {
		width = n
	}
	return &suiteDisplay{w: w, live: live, width: width, now: time.Now, seen: map[string]seenTest{}, stopped: make(chan struct{})}
}

// startTicks redraws the live line every second until stop.
func (d *suiteDisplay) startTicks(ctx context.Context) {
	if !d.live {
		return
	}
	d.ticking.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.stopped:
				return
			case <-t.C:
				d.mu.Lock()
				d.clear()
				d.draw()
				d.mu.Unlock()
			}
		}
	})
}

// stop removes the live line for good (idempotent).
func (d *suiteDisplay) stop() {
	d.mu.Lock()
	select {
	case <-d.stopped:
	default:
		close(d.stopped)
	}
	d.clear()
	d.live = false
	d.mu.Unlock()
	d.ticking.Wait()
}

// notice prints a line from the command itself.
func (d *suiteDisplay) notice(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprintln(d.w, msg)
	d.draw()
}

// update takes in the suite run's current state and prints a line for
// each test that changed since the last one.
func (d *suiteDisplay) update(sr *wfv1.SuiteRun) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last = sr
	if d.nameCol == 0 {
		for _, r := range sr.GetResults() {
			d.nameCol = max(d.nameCol, len([]rune(r.GetTest())))
		}
		d.nameCol = min(d.nameCol, 32)
	}
	var lines []string
	for _, r := range sr.GetResults() {
		prev, now := d.seen[r.GetTest()], seenTest{outcome: r.GetOutcome(), attempts: len(r.GetAttempts())}
		d.seen[r.GetTest()] = now
		final := now.outcome != wfv1.TestOutcome_TEST_OUTCOME_PENDING && now.outcome != wfv1.TestOutcome_TEST_OUTCOME_RUNNING
		// Every attempt that started since the last state, even when the
		// watch saw only the end of it.
		for n := prev.attempts + 1; n <= now.attempts; n++ {
			if n > 1 || !final {
				lines = append(lines, d.attemptLine(r, n))
			}
		}
		if final && now.outcome != prev.outcome {
			lines = append(lines, d.resultLine(r))
		}
	}
	d.clear()
	for _, l := range lines {
		fmt.Fprintln(d.w, l)
	}
	d.draw()
}

// attemptLine says that attempt n of a test started (after a failed one
// when it is not the first).
func (d *suiteDisplay) attemptLine(r *wfv1.TestResult, n int) string {
	cur := r.GetAttempts()[n-1]
	if n == 1 {
		return fmt.Sprintf("%s %s  running  run %s", d.symbol("▸", ""), d.name(r), cur.GetRunId())
	}
	prev := r.GetAttempts()[n-2]
	return fmt.Sprintf("%s %s  attempt %d failed (%.2f): %s; retrying (attempt %d)  run %s",
		d.symbol("↻", "33"), d.name(r), prev.GetNumber(), prev.GetScore(), oneLine(attemptWhy(prev), 300), cur.GetNumber(), cur.GetRunId())
}

// resultLine is a test's outcome: "✓ login  passed 0.93  12.4s  run …".
func (d *suiteDisplay) resultLine(r *wfv1.TestResult) string {
	var (
		sym, color string
		last       *wfv1.TestAttempt
	)
	if as := r.GetAttempts(); len(as) > 0 {
		last = as[len(as)-1]
	}
	switch r.GetOutcome() {
	case wfv1.TestOutcome_TEST_OUTCOME_PASSED:
		sym, color = "✓", "32"
	case wfv1.TestOutcome_TEST_OUTCOME_FLAKY:
		sym, color = "~", "33"
	case wfv1.TestOutcome_TEST_OUTCOME_FAILED:
		sym, color = "✗", "31"
	case wfv1.TestOutcome_TEST_OUTCOME_ERROR:
		sym, color = "!", "31"
	default:
		sym, color = "-", "2"
	}
	line := d.symbol(sym, color) + " " + d.name(r) + "  " + outcomeName(r.GetOutcome())
	if last != nil {
		line += fmt.Sprintf(" %.2f", r.GetScore())
	}
	if r.GetStartTime() != nil && r.GetEndTime() != nil {
		line += "  " + formatDuration(max(r.GetEndTime().AsTime().Sub(r.GetStartTime().AsTime()), 0))
	}
	if n := len(r.GetAttempts()); n > 1 {
		line += fmt.Sprintf("  (%d attempts)", n)
	}
	if last != nil && last.GetRunId() != "" {
		line += "  run " + last.GetRunId()
	}
	switch r.GetOutcome() {
	case wfv1.TestOutcome_TEST_OUTCOME_PASSED, wfv1.TestOutcome_TEST_OUTCOME_FLAKY:
	default:
		why := r.GetMessage()
		if last != nil && r.GetOutcome() == wfv1.TestOutcome_TEST_OUTCOME_FAILED {
			if w := attemptWhy(last); w != "" {
				why = w
			}
		}
		if why != "" {
			line += ": " + oneLine(why, 500)
		}
	}
	return line
}

// attemptWhy says why an attempt failed: its failing oracles with their
// evidence, else its message.
func attemptWhy(a *wfv1.TestAttempt) string {
	var parts []string
	for _, o := range a.GetOracles() {
		if o.GetPassed() {
			continue
		}
		p := o.GetKind()
		if o.GetName() != "" && o.GetName() != o.GetKind() {
			p = o.GetName() + " (" + o.GetKind() + ")"
		}
		if o.GetDetail() != "" {
			p += ": " + o.GetDetail()
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return a.GetMessage()
	}
	if a.GetTimedOut() {
		parts = append([]string{"timed out"}, parts...)
	}
	return strings.Join(parts, "; ")
}

func (d *suiteDisplay) name(r *wfv1.TestResult) string {
	n := r.GetTest()
	if pad := d.nameCol - len([]rune(n)); pad > 0 {
		n += strings.Repeat(" ", pad)
	}
	return n
}

// symbol colours sym on a terminal.
func (d *suiteDisplay) symbol(sym, color string) string {
	if !d.live || color == "" {
		return sym
	}
	return "\x1b[" + color + "m" + sym + "\x1b[0m"
}

func (d *suiteDisplay) clear() {
	if d.shown {
		fmt.Fprint(d.w, "\r\x1b[K")
		d.shown = false
	}
}

func (d *suiteDisplay) draw() {
	if !d.live || d.last == nil || suiteEnded(d.last.GetStatus()) {
		return
	}
	sum := suite.Summarize(d.last.GetResults())
	done := sum.GetTotal() - sum.GetPending() - sum.GetRunning()
	parts := []string{suiteStatusName(d.last.GetStatus()), fmt.Sprintf("%d/%d done", done, sum.GetTotal())}
	if sum.GetRunning() > 0 {
		parts = append(parts, fmt.Sprintf("%d running", sum.GetRunning()))
	}
	if n := sum.GetFailed() + sum.GetErrored(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", n))
	}
	if start := d.last.GetStartTime(); start != nil {
		parts = append(parts, formatDuration(max(d.now().Sub(start.AsTime()), 0).Truncate(100*time.Millisecond)))
	}
	fmt.Fprint(d.w, oneLine(strings.Join(parts, " · "), d.width-1))
	d.shown = true
}
