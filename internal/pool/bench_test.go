package pool

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// BenchmarkLease measures a lease and its release on a warm pool: creating
// an incognito context (with downloads denied) and handing it back.
func BenchmarkLease(b *testing.B) {
	tb := setup(b, Config{Capacity: 1, RecycleAfter: -1, MemoryLimit: -1})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		l, err := tb.pool.Lease(ctx, browser.SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
}

// BenchmarkContextMemory measures what an open context with a loaded page
// costs: the process group's memory with one such context and with five,
// reported per extra context, and the idle process's own memory.
func BenchmarkContextMemory(b *testing.B) {
	tb := setup(b, Config{Capacity: 5, ContextsPerProcess: 5, RecycleAfter: -1, MemoryLimit: -1})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, typicalPage)
	}))
	b.Cleanup(srv.Close)
	proc := tb.procs()[0]
	var idle, one, five groupMemory
	for b.Loop() {
		idle = measureGroup(proc.pid())
		var leases []*Lease
		for i := range 5 {
			l := lease(b, tb.pool)
			require.Same(b, proc, l.proc)
			require.Equal(b, "Orders", visit(b, l.Session(), srv.URL+"/"))
			leases = append(leases, l)
			if i == 0 {
				one = measureGroup(proc.pid())
			}
		}
		five = measureGroup(proc.pid())
		for _, l := range leases {
			l.Release()
		}
		tb.waitClosed(b, proc)
	}
	b.ReportMetric(float64(idle.PSS), "idle-pss-bytes/process")
	b.ReportMetric(float64(idle.RSS), "idle-rss-bytes/process")
	b.ReportMetric(float64(five.PSS-one.PSS)/4, "pss-bytes/context")
	b.ReportMetric(float64(five.RSS-one.RSS)/4, "rss-bytes/context")
	b.ReportMetric(float64(five.Processes-one.Processes)/4, "processes/context")
}

// waitClosed waits until proc has closed every released context (only the
// blank start page's target is left).
func (tb *testBundle) waitClosed(t testing.TB, proc *process) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := proc.browser.Context(ctx).Pages()
		return err == nil && len(res) <= 1
	}, time.Minute, 20*time.Millisecond)
}

// typicalPage is a page of the size agents meet: a form, a table of 200
// rows, some script.
var typicalPage = func() string {
	var sb strings.Builder
	sb.WriteString(`<!doctype html><title>Orders</title><style>td{padding:2px}</style>
<form><label>Search <input name=q></label><select name=s><option>open<option>closed</select><button>Go</button></form><table>`)
	for i := range 200 {
		fmt.Fprintf(&sb, `<tr><td>#%d</td><td>Customer %d</td><td>%d.00</td><td><a href="/o/%d">open</a> <button>Delete</button></td></tr>`, i, i, i*7, i)
	}
	sb.WriteString(`</table><script>document.querySelectorAll('button').forEach(b => b.addEventListener('click', e => e.preventDefault()))</script>`)
	return sb.String()
}()
