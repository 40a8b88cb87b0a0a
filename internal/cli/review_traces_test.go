package cli

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Text of a trace drives no terminal: no escape sequence, C1 control or
// bidi override of a start URL (url.Parse lets the last two through), a
// page's URL or a recorded tool or role reaches the output.
func TestReviewPrintTraceControls(t *testing.T) {
	const bad = "\x1b]0;owned\a\u009b2J\u202e"
	target, err := structpb.NewStruct(map[string]any{"role": "button" + bad, "name": "Save" + bad})
	require.NoError(t, err)
	args, err := structpb.NewStruct(map[string]any{"url": "https://x.example/" + bad})
	require.NoError(t, err)
	tr := &wfv1.Trace{Id: "t1", TaskKey: "abc", Goal: "g" + bad, StartUrl: "https://x.example/" + bad,
		Actions: []*wfv1.TraceAction{{Step: 1, Tool: "browser_click" + bad, Target: target, Arguments: args,
			UrlPattern: "https://x.example/" + bad, TargetError: "e" + bad}},
		Final: &wfv1.TraceFinal{Url: "https://x.example/done" + bad, UrlPattern: "https://x.example/*" + bad, Reason: "r" + bad,
			Verdict: &wfv1.JudgeVerdict{Done: true, Reason: "v" + bad}}}
	var b strings.Builder
	printTrace(&b, tr)
	out := b.String()
	for _, r := range out {
		if r == '\n' {
			continue
		}
		require.False(t, unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r), "%U in the output:\n%q", r, out)
	}
	require.Contains(t, out, "start URL:   https://x.example/")
	require.Contains(t, out, "browser_click")
}
