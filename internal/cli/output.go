package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// jsonOptions match the REST gateway's JSON: proto field names, enums by
// name.
var jsonOptions = protojson.MarshalOptions{UseProtoNames: true}

// printJSON writes m as one line of JSON.
func printJSON(w io.Writer, m proto.Message) error {
	b, err := jsonOptions.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// printRun writes a run's details for people.
func printRun(w io.Writer, r *wfv1.Run) {
	var b strings.Builder
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-12s %s\n", k+":", v)
		}
	}
	row("run", r.GetId())
	row("status", statusName(r.GetStatus()))
	row("goal", oneLine(r.GetParams().GetGoal(), 200))
	row("start URL", r.GetParams().GetStartUrl())
	if labels := r.GetParams().GetLabels(); len(labels) > 0 {
		row("labels", formatLabels(labels))
	}
	if ts := r.GetCreateTime(); ts != nil {
		row("created", ts.AsTime().Local().Format(time.DateTime))
	}
	if d := runDuration(r); d > 0 {
		row("duration", formatDuration(d))
	}
	row("steps", strconv.Itoa(int(r.GetStepCount())))
	if u := r.GetUsage(); u.GetModelCalls() > 0 {
		row("usage", formatUsage(u))
	}
	if a := r.GetPendingApproval(); a != nil {
		row("approval", approvalText(a))
	}
	row("summary", oneLine(r.GetSummary(), 500))
	row("final URL", r.GetFinalUrl())
	row("screenshot", r.GetFinalScreenshotMediaId())
	if e := r.GetError(); e != nil {
		row("error", errorText(e))
	}
	if r.GetCancelRequested() && r.GetStatus() != wfv1.RunStatus_RUN_STATUS_CANCELLED {
		row("note", "cancel requested")
	}
	_, _ = io.WriteString(w, b.String())
}

// runDuration is how long a run has run (so far, when it has not ended).
func runDuration(r *wfv1.Run) time.Duration {
	if r.GetStartTime() == nil {
		return 0
	}
	end := time.Now()
	if r.GetEndTime() != nil {
		end = r.GetEndTime().AsTime()
	}
	return max(end.Sub(r.GetStartTime().AsTime()), 0)
}

func formatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, " ")
}

func formatUsage(u *wfv1.Usage) string {
	s := fmt.Sprintf("%s tokens (%s in, %s out), %d model calls", formatCount(u.GetInputTokens()+u.GetOutputTokens()),
		formatCount(u.GetInputTokens()), formatCount(u.GetOutputTokens()), u.GetModelCalls())
	if u.GetCostUsd() > 0 {
		s += ", " + formatCost(u.GetCostUsd())
	}
	return s
}

func errorText(e *wfv1.RunError) string {
	s := strings.TrimPrefix(e.GetCategory().String(), "ERROR_CATEGORY_")
	if e.GetMessage() != "" {
		s += ": " + oneLine(e.GetMessage(), 500)
	}
	if e.GetStepNumber() > 0 {
		s += fmt.Sprintf(" (step %d)", e.GetStepNumber())
	}
	return s
}

func approvalText(a *wfv1.ApprovalRequest) string {
	s := a.GetAction()
	if a.GetReason() != "" {
		s += " (" + a.GetReason() + ")"
	}
	if a.GetSource() != "" {
		s += " [" + a.GetSource() + "]"
	}
	return oneLine(s, 300)
}

// formatCount writes n with thousands separators: 12,345.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func formatCost(usd float64) string {
	if usd == 0 {
		return "$0"
	}
	if usd < 0.01 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// formatDuration is a duration rounded for people: 850ms, 12.3s, 4m05s.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// plural is "1 step", "3 steps".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return formatCount(n) + " " + word + "s"
}

// oneLine folds whitespace, drops control and bidi control characters
// (text from pages and models must not drive the terminal or a CI log:
// escape sequences, bells, reordered text) and cuts s to n runes with an
// ellipsis.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:max(n-1, 0)]) + "…"
	}
	return s
}

// actionText is a short account of an action: tool, its main argument and
// outcome. Arguments are the server's records, already redacted.
func actionText(a *wfv1.Action) string {
	s := a.GetTool()
	if arg := mainArgument(a.GetArguments()); arg != "" {
		s += " " + arg
	}
	if o := a.GetOutcome(); o != "" && o != "ok" {
		s += " → " + o
	}
	return s
}

// mainArgument picks the argument that says what an action did.
func mainArgument(args *structpb.Struct) string {
	f := args.GetFields()
	for _, k := range []string{"url", "ref", "text", "value", "key", "option", "direction", "status"} {
		v, ok := f[k]
		if !ok {
			continue
		}
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok && s.StringValue != "" {
			return strconv.Quote(oneLine(s.StringValue, 60))
		}
	}
	if t, ok := f["target"]; ok {
		if m := t.GetStructValue(); m != nil {
			for _, k := range []string{"name", "text", "css", "role"} {
				if s := m.GetFields()[k].GetStringValue(); s != "" {
					return strconv.Quote(oneLine(s, 60))
				}
			}
		}
	}
	return ""
}

// printJSONLines writes each message as one line of JSON (for --json).
func printJSONLines[M proto.Message](w io.Writer, ms []M) error {
	for _, m := range ms {
		if err := printJSON(w, m); err != nil {
			return err
		}
	}
	return nil
}

// listAll gathers up to limit items of a paged List call: page asks for
// the page at token (each call with the session's call timeout) and
// returns its items and the next token, "" after the last page.
func listAll[T any](ctx context.Context, s *session, limit int, page func(ctx context.Context, token string) ([]T, string, error)) ([]T, error) {
	var items []T
	token := ""
	for len(items) < limit {
		cctx, cancel := s.call(ctx)
		got, next, err := page(cctx, token)
		cancel()
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
		if next == "" || next == token || len(got) == 0 {
			break // the last page, or a server that would page forever
		}
		token = next
	}
	return items[:min(len(items), limit)], nil
}
