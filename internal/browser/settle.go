package browser

import (
	"context"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// SettleOptions bound the wait for a page to settle after an action.
type SettleOptions struct {
	// Quiet is how long the page must go without network activity,
	// navigation or DOM change to count as settled. Default 150ms: long
	// enough for the chained work of a click (a handler that fetches, then
	// renders) to show as activity, short enough not to dominate a step;
	// requests and navigations in flight hold the page busy regardless.
	Quiet time.Duration
	// Max caps the wait; a page still busy then is reported as such.
	// Default 5s.
	Max time.Duration
}

// Defaults of SettleOptions.
const (
	DefaultSettleQuiet = 150 * time.Millisecond
	DefaultSettleMax   = 5 * time.Second
)

func (o SettleOptions) withDefaults() SettleOptions {
	if o.Quiet <= 0 {
		o.Quiet = DefaultSettleQuiet
	}
	if o.Max <= 0 {
		o.Max = DefaultSettleMax
	}
	return o
}

// SettleReport says how settling went.
type SettleReport struct {
	// Duration of the wait.
	Duration time.Duration `json:"duration"`
	// Capped is true when the page was still busy at SettleOptions.Max;
	// Busy says with what: "navigation", "network", "dom" or "popup".
	Capped bool   `json:"capped,omitempty"`
	Busy   string `json:"busy,omitempty"`
	// Mutations counts the DOM changes seen while settling.
	Mutations int `json:"mutations,omitempty"`
}

// settle waits until the page is quiet — no navigation under way, no
// request started since `since` in flight, no popup being opened, no network
// event and no DOM mutation for o.Quiet — or until o.Max. It watches
// events; it never sleeps a fixed time.
func (pg *Page) settle(ctx context.Context, since time.Time, o SettleOptions) SettleReport {
	o = o.withDefaults()
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, o.Max)
	defer cancel()
	var rep SettleReport
	var probe proto.RuntimeRemoteObjectID
	probeNav := -1
	defer func() {
		if probe != "" {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = callOn(rctx, pg.p, probe, `function() { this.stop(); }`, nil)
			release(rctx, pg.p, probe)
			cancel()
		}
	}()
	for {
		if busy := pg.waitNetworkQuiet(sctx, since, o.Quiet); busy != "" {
			rep.Capped, rep.Busy = true, busy
			break
		}
		st := pg.tab.state(since)
		if st.closed {
			break
		}
		if probe == "" || probeNav != st.navSeq {
			probe = ""
			r, err := proto.RuntimeEvaluate{Expression: jsObserve}.Call(pg.p.Context(sctx))
			if err != nil || r.ExceptionDetails != nil || r.Result.ObjectID == "" {
				if sctx.Err() != nil {
					rep.Capped, rep.Busy = true, "dom"
					break
				}
				continue // the document is being replaced; wait for the new one
			}
			probe, probeNav = r.Result.ObjectID, st.navSeq
		}
		remaining := time.Until(start.Add(o.Max))
		var r struct {
			Quiet     bool `json:"quiet"`
			Mutations int  `json:"mutations"`
		}
		err := callOn(sctx, pg.p, probe, `function(q, m) { return this.wait(q, m); }`, &r,
			o.Quiet.Milliseconds(), remaining.Milliseconds())
		if err != nil {
			if sctx.Err() != nil {
				rep.Capped, rep.Busy = true, "dom"
				break
			}
			probe = "" // a navigation destroyed the probe's document
			continue
		}
		rep.Mutations = r.Mutations
		if !r.Quiet {
			rep.Capped, rep.Busy = true, "dom"
			break
		}
		st = pg.tab.state(since)
		if st.closed || (st.navSeq == probeNav && !st.loading && st.inflight == 0 && st.adopting == 0 &&
			time.Since(st.lastActivity) >= o.Quiet) {
			break
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

// waitNetworkQuiet waits until the page is not loading, has no counted
// request started since `since` in flight, opens no popup, and has seen no
// network event for quiet. It returns "" then, or what kept the page busy
// when ctx ended.
func (pg *Page) waitNetworkQuiet(ctx context.Context, since time.Time, quiet time.Duration) string {
	for {
		st := pg.tab.state(since)
		if st.closed {
			return ""
		}
		busy, wait := "", time.Duration(0)
		switch {
		case st.loading:
			busy = "navigation"
		case st.inflight > 0:
			busy = "network"
		case st.adopting > 0:
			busy = "popup"
		default:
			idle := time.Since(st.lastActivity)
			if idle >= quiet {
				return ""
			}
			busy, wait = "network", quiet-idle
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-st.changed:
		case <-st.tabsChanged:
		case <-fire:
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return busy
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// waitNavigation waits until the page starts a navigation after navSeq
// before (or, when it is loading already, until that load ends).
func (pg *Page) waitNavigation(ctx context.Context, before int) error {
	for {
		st := pg.tab.state(time.Now())
		if st.navSeq != before || st.closed {
			return nil
		}
		select {
		case <-st.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
