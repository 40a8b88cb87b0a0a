package trace_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wayfinder/wayfinder/internal/trace"
)

// BenchmarkMatch matches a fingerprint on a snapshot of about 500
// elements (250 table rows of a link and a button) with the details of its
// shortlist, as a replay step does.
func BenchmarkMatch(b *testing.B) {
	var page strings.Builder
	page.WriteString(`<!doctype html><title>Big</title><main><h1>Items</h1><table>`)
	for i := range 250 {
		fmt.Fprintf(&page, `<tr><td><a href="/items/%d">Item %d</a></td><td><button data-testid="rm-%d">Remove</button></td></tr>`, i, i, i)
	}
	page.WriteString(`</table></main>`)
	base := serve(b, map[string]string{"/": page.String()})
	p := newPage(b)
	snap, details := look(b, p, base+"/", 600)
	if len(snap.Elements) < 490 {
		b.Fatalf("%d elements", len(snap.Elements))
	}
	fp := capture(b, snap, details, "button", "Remove", "Item 137")
	b.ReportMetric(float64(len(snap.Elements)), "elements")
	b.ResetTimer()
	for b.Loop() {
		short := trace.Shortlist(fp, snap, 0)
		if res := trace.Match(fp, snap, details); !res.Confident || len(short) == 0 {
			b.Fatal(res.Reason)
		}
	}
}
