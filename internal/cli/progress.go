package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// display shows a followed run to people: a line for each event worth
// keeping (a finished step, an approval request, a cancellation) and, on
// a terminal, a live status line under them that is redrawn in place
// (step, last action, tokens, cost, elapsed).
type display struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	width int
	now   func() time.Time

	runID    string
	maxSteps int32
	base     time.Time // when the run was created: elapsed counts from here

	status wfv1.RunStatus
	step   int32
	action string
	tokens int64
	cost   float64
	shown  bool // the live line is on screen
}

func newDisplay(w io.Writer, live bool, columns string, runID string, known *wfv1.Run) *display {
	width := 80
	if n, err := strconv.Atoi(columns); err == nil && n >= 20 {
		width = n
	}
	d := &display{w: w, live: live, width: width, now: time.Now, runID: runID}
	if known != nil {
		d.maxSteps = known.GetParams().GetMaxSteps()
		d.status = known.GetStatus()
		if ts := known.GetCreateTime(); ts != nil {
			d.base = ts.AsTime()
		}
	}
	return d
}

// event takes in one event.
func (d *display) event(ev *wfv1.RunEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base.IsZero() && ev.GetTime() != nil {
		d.base = ev.GetTime().AsTime()
	}
	if ev.GetStatus() != wfv1.RunStatus_RUN_STATUS_UNSPECIFIED {
		d.status = ev.GetStatus()
	}
	var lines []string
	switch ev.GetType() {
	case wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED:
		lines = append(lines, "queued")
	case wfv1.RunEventType_RUN_EVENT_TYPE_STARTED:
		lines = append(lines, "started")
	case wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED:
		if n := ev.GetStep().GetNumber(); n > 0 {
			d.step = n
		} else {
			d.step++
		}
	case wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED:
		d.action = ev.GetTool().GetTool() + " …"
	case wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_RESULT:
		d.action = ev.GetTool().GetTool()
		if o := ev.GetTool().GetOutcome(); o != "" && o != "ok" {
			d.action += " → " + o
		}
	case wfv1.RunEventType_RUN_EVENT_TYPE_JUDGE_VERDICT:
		if v := ev.GetVerdict(); v.GetDone() || v.GetFailed() {
			verdict := "done"
			if v.GetFailed() {
				verdict = "failed"
			}
			lines = append(lines, fmt.Sprintf("judge: %s (%.2f) %s", verdict, v.GetConfidence(), oneLine(v.GetReason(), 200)))
		}
	case wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED:
		lines = append(lines, d.stepFinished(ev.GetStep())...)
	case wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED:
		line := "approval needed"
		if a := ev.GetApproval(); a != nil {
			line += ": " + approvalText(a)
		} else if ev.GetMessage() != "" {
			line += ": " + oneLine(ev.GetMessage(), 300)
		}
		lines = append(lines, line,
			fmt.Sprintf("answer with: wayfinder approve %s   (or --reject --message \"…\")", d.runID))
	case wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED:
		line := "approval answered"
		if a := ev.GetApproval(); a != nil {
			line = "rejected"
			if a.GetApproved() {
				line = "approved"
			}
			if a.GetAnsweredBy() != "" {
				line += " by " + a.GetAnsweredBy()
			}
			if a.GetMessage() != "" {
				line += ": " + oneLine(a.GetMessage(), 200)
			}
		}
		lines = append(lines, line)
	case wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED:
		if r := ev.GetRun(); r != nil && r.GetUsage() != nil {
			d.tokens = r.GetUsage().GetInputTokens() + r.GetUsage().GetOutputTokens()
			d.cost = r.GetUsage().GetCostUsd()
		}
	default:
		name := strings.ToLower(strings.TrimPrefix(ev.GetType().String(), "RUN_EVENT_TYPE_"))
		lines = append(lines, strings.TrimSpace(strings.ReplaceAll(name, "_", " ")+": "+oneLine(ev.GetMessage(), 300)))
	}
	d.clear()
	for _, l := range lines {
		fmt.Fprintf(d.w, "[%7s] %s\n", formatDuration(d.elapsedAt(ev)), l)
	}
	d.draw()
}

func (d *display) stepFinished(st *wfv1.Step) []string {
	if st == nil {
		return nil
	}
	d.step = max(d.step, st.GetNumber())
	d.tokens += st.GetUsage().GetInputTokens() + st.GetUsage().GetOutputTokens()
	d.cost += st.GetUsage().GetCostUsd()
	acts := make([]string, 0, len(st.GetActions()))
	for _, a := range st.GetActions() {
		acts = append(acts, actionText(a))
	}
	if len(acts) > 0 {
		d.action = acts[len(acts)-1]
	}
	line := fmt.Sprintf("step %d", st.GetNumber())
	if st.GetActor() == "human" {
		line += " (human)"
	}
	if len(acts) > 0 {
		line += ": " + strings.Join(acts, ", ")
	}
	if st.GetUrl() != "" {
		line += " @ " + st.GetUrl()
	}
	lines := []string{oneLine(line, 400)}
	if e := st.GetError(); e != nil {
		lines = append(lines, "  error: "+errorText(e))
	}
	for _, b := range st.GetBlockedRequests() {
		lines = append(lines, fmt.Sprintf("  blocked %s %s (%s)", b.GetKind(), oneLine(b.GetUrl(), 120), b.GetReason()))
	}
	return lines
}

// elapsedAt is the run time at an event (server clock on both ends).
func (d *display) elapsedAt(ev *wfv1.RunEvent) time.Duration {
	if ev.GetTime() == nil || d.base.IsZero() {
		return 0
	}
	return max(ev.GetTime().AsTime().Sub(d.base), 0)
}

// tick redraws the live line so that elapsed time moves.
func (d *display) tick() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	d.draw()
}

// notice prints a line from the command itself (a reconnect).
func (d *display) notice(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprintf(d.w, "          %s\n", msg)
	d.draw()
}

// stop removes the live line for good.
func (d *display) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	d.live = false
}

func (d *display) clear() {
	if d.shown {
		fmt.Fprint(d.w, "\r\x1b[K")
		d.shown = false
	}
}

func (d *display) draw() {
	if !d.live || ended(d.status) {
		return
	}
	parts := []string{statusName(d.status)}
	if d.step > 0 {
		step := "step " + strconv.Itoa(int(d.step))
		if d.maxSteps > 0 {
			step += "/" + strconv.Itoa(int(d.maxSteps))
		}
		parts = append(parts, step)
	}
	if !d.base.IsZero() {
		parts = append(parts, formatDuration(max(d.now().Sub(d.base), 0).Truncate(100*time.Millisecond)))
	}
	parts = append(parts, formatCount(d.tokens)+" tok", formatCost(d.cost))
	// The action last: a narrow terminal cuts it, not the numbers.
	if d.action != "" {
		parts = append(parts, d.action)
	}
	fmt.Fprint(d.w, oneLine(strings.Join(parts, " · "), d.width-1))
	d.shown = true
}

// printSummary writes how a run ended.
func printSummary(w io.Writer, r *wfv1.Run) {
	head := statusName(r.GetStatus())
	if d := runDuration(r); d > 0 {
		head += " in " + formatDuration(d)
	}
	head += " · " + plural(int64(r.GetStepCount()), "step")
	if u := r.GetUsage(); u != nil {
		head += " · " + plural(u.GetInputTokens()+u.GetOutputTokens(), "token") + " · " + formatCost(u.GetCostUsd())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", head)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-12s %s\n", k+":", v)
		}
	}
	row("run", r.GetId())
	row("summary", oneLine(r.GetSummary(), 500))
	row("final URL", r.GetFinalUrl())
	if m := r.GetFinalScreenshotMediaId(); m != "" {
		row("screenshot", m+"   (wayfinder media get "+m+" -o final.png)")
	}
	if e := r.GetError(); e != nil {
		row("error", errorText(e))
	}
	_, _ = io.WriteString(w, b.String())
}
