package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// Event streams read events from the store at the client's pace, so a slow
// client delays only itself and the events it has not read wait in
// Postgres, not in memory: a stream holds one batch (at most 100 events per
// run) and its transport's buffers. A client that takes no event for
// SendStall is disconnected (gRPC: RESOURCE_EXHAUSTED naming where to
// resume), so a stalled connection does not hold a stream forever.

// SendStall is how long a stream waits for its client to take one event
// before it gives up on the client.
const SendStall = 30 * time.Second

// errStalled: the client took no event for SendStall.
var errStalled = errors.New("the client did not read the stream")

// sendWithin calls send, giving up after stall. A send given up on stays
// blocked until the stream ends, which happens when the handler returns.
func sendWithin(stall time.Duration, send func() error) error {
	done := make(chan error, 1)
	go func() { done <- send() }()
	t := time.NewTimer(stall)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errStalled
	}
}

// FollowRunEvents sends the caller's run's events after sequence after
// through send, in order, following new ones live until the FINISHED event
// has been sent; then it returns nil. It returns at once, sending nothing,
// when the run finished at or before after. An error of send ends it.
func (s *RunService) FollowRunEvents(ctx context.Context, runID string, after int64, send func(*wfv1.RunEvent) error) error {
	if err := requireID("run_id", runID); err != nil {
		return err
	}
	if after < 0 {
		var v fault.Violations
		v.Add("after_sequence", "must not be negative")
		return v.Err()
	}
	wake, unsubscribe := s.cfg.Hub.Subscribe(runID)
	defer unsubscribe()
	run, err := s.ownRun(ctx, runID)
	if err != nil {
		return err
	}
	// A finished run whose FINISHED event lies at or before after has
	// nothing more to send. Any other run's FINISHED event is still ahead
	// of the stream, which ends when it sends it.
	if store.IsTerminal(run.Status) && after >= run.LastEventSequence {
		return nil
	}
	const batch = 100
	for {
		evs, err := s.cfg.Store.ListEvents(ctx, runID, after, batch)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
			after = ev.Sequence
			if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
				return nil
			}
		}
		if len(evs) == batch {
			continue
		}
		if err := s.waitForChange(ctx, wake); err != nil {
			return err
		}
	}
}

// EventCursor is a position in a tenant's event stream: the newest event
// time the stream had reached, and the last event it sent.
type EventCursor struct {
	Time  time.Time
	RunID string
	Seq   int64
}

// String encodes c as "<unix microseconds>.<run ID>.<sequence>".
func (c EventCursor) String() string {
	return fmt.Sprintf("%d.%s.%d", c.Time.UnixMicro(), c.RunID, c.Seq)
}

// ResumeOverlap is how far before a cursor's time a resumed tenant stream
// starts: events become visible when their transaction commits, a little
// after their time, so an event can arrive after a later one. Events of
// other runs in that window may be sent again; clients deduplicate by
// (run_id, sequence).
const ResumeOverlap = 5 * time.Second

// ResumeAfter returns where a tenant stream resumes after the event whose
// cursor (EventCursor.String) is id: ResumeOverlap before its time, past
// its own run's sequence.
func ResumeAfter(id string) (EventCursor, error) {
	bad := func() (EventCursor, error) {
		var v fault.Violations
		v.Add("last_event_id", "not a cursor of this stream; pass the id of the last event received")
		return EventCursor{}, v.Err()
	}
	micros, rest, ok := strings.Cut(id, ".")
	if !ok {
		return bad()
	}
	runID, seqText, ok := strings.Cut(rest, ".")
	if !ok {
		return bad()
	}
	us, err1 := strconv.ParseInt(micros, 10, 64)
	seq, err2 := strconv.ParseInt(seqText, 10, 64)
	if _, err3 := uuid.Parse(runID); err1 != nil || err2 != nil || err3 != nil || seq < 0 {
		return bad()
	}
	return EventCursor{Time: time.UnixMicro(us).Add(-ResumeOverlap), RunID: runID, Seq: seq}, nil
}

// FollowEvents sends the events of all the caller's runs after from
// through send, each with the stream's cursor after it, and follows new
// ones live until ctx ends or send fails. "After from" means: created
// after from.Time (zero: now), and for run from.RunID, after sequence
// from.Seq. When types is not empty, only events of those types are sent.
// Each run's events come in sequence order; across runs they come in time
// order within one read of the store.
func (s *RunService) FollowEvents(ctx context.Context, from EventCursor, types []wfv1.RunEventType,
	send func(*wfv1.RunEvent, EventCursor) error) error {
	var v fault.Violations
	validateEventTypes(&v, types)
	if err := v.Err(); err != nil {
		return err
	}
	tn := tenant.ID(ctx)
	wake, unsubscribe := s.cfg.Hub.Subscribe(store.TenantWakeKey(tn))
	defer unsubscribe()
	f := &tenantFollower{store: s.cfg.Store, tenant: tn, from: from, types: types, hw: from.Time}
	for {
		evs, more, err := f.read(ctx)
		if err != nil {
			return err
		}
		for _, e := range evs {
			f.hw = maxTime(f.hw, e.key)
			if err := send(e.ev, EventCursor{Time: f.hw, RunID: e.ev.RunId, Seq: e.ev.Sequence}); err != nil {
				return err
			}
		}
		if more {
			continue
		}
		if err := s.waitForChange(ctx, wake); err != nil {
			return err
		}
	}
}

func validateEventTypes(v *fault.Violations, types []wfv1.RunEventType) {
	for i, t := range types {
		if _, ok := wfv1.RunEventType_name[int32(t)]; !ok || t == wfv1.RunEventType_RUN_EVENT_TYPE_UNSPECIFIED {
			v.Add(fmt.Sprintf("types[%d]", i), "unknown event type %d", t)
		}
	}
}

// tenantFollower reads a tenant's events. It knows, for every run that
// may still get events, the sequence of the last event it read, so no
// event is skipped however late its transaction commits, and it learns of
// runs from the runs table (live runs and those that ended since its last
// read).
type tenantFollower struct {
	store  *store.Store
	tenant string
	from   EventCursor
	types  []wfv1.RunEventType
	// known is the last sequence read per run; nil before the first read.
	known map[string]int64
	// endedSince: runs that ended before it have been read to their end.
	endedSince time.Time
	// hw is the newest event time (as ordered) sent so far.
	hw time.Time
}

const (
	// followBatch bounds the events read per run in one read.
	followBatch = 100
	// followRuns bounds the runs read from in one read (a replay of a
	// long period).
	followRuns = 50
	// endedSlack covers the time between a run's end (its transaction's
	// start) and the moment its FINISHED event is visible.
	endedSlack = time.Minute
)

// keyed is an event with its place in the stream's time order.
type keyed struct {
	ev  *wfv1.RunEvent
	key time.Time
}

// read returns the events recorded since the previous read, and whether
// more were left for the next one.
func (f *tenantFollower) read(ctx context.Context) ([]keyed, bool, error) {
	if f.known == nil {
		f.known = map[string]int64{}
		start := f.from.Time
		if start.IsZero() {
			start = time.Now()
		}
		f.endedSince = start.Add(-endedSlack)
	}
	active, now, err := f.store.ActiveRuns(ctx, f.tenant, f.endedSince)
	if err != nil {
		return nil, false, err
	}
	if f.from.Time.IsZero() {
		// "Now" by the database's clock, which times the events.
		f.from.Time, f.hw = now, now
	}
	var fresh []string
	for _, a := range active {
		if _, ok := f.known[a.RunID]; !ok {
			fresh = append(fresh, a.RunID)
		}
	}
	var starts map[string]int64
	if len(fresh) > 0 {
		if starts, err = f.store.EventSeqsAt(ctx, fresh, f.from.Time); err != nil {
			return nil, false, err
		}
	}
	known := make(map[string]int64, len(active))
	latest := make(map[string]int64, len(active))
	var after []store.RunSeq
	for _, a := range active {
		seq, ok := f.known[a.RunID]
		if !ok {
			seq = starts[a.RunID]
			if a.RunID == f.from.RunID {
				seq = max(seq, f.from.Seq)
			}
		}
		known[a.RunID], latest[a.RunID] = seq, a.Seq
		if a.Seq > seq {
			after = append(after, store.RunSeq{RunID: a.RunID, Seq: seq})
		}
	}
	// Runs no longer active are read to their end: forget them.
	f.known = known
	more := len(after) > followRuns
	if more {
		after = after[:followRuns]
	}
	evs, err := f.store.ListEventsAfter(ctx, after, f.types, followBatch)
	if err != nil {
		return nil, false, err
	}
	count := map[string]int{}
	last := map[string]int64{}
	for _, ev := range evs {
		count[ev.RunId]++
		last[ev.RunId] = ev.Sequence
	}
	for _, a := range after {
		if count[a.RunID] == followBatch {
			f.known[a.RunID], more = last[a.RunID], true
			continue
		}
		// Without a type filter these are equal; with one, the events
		// up to latest that were left out need not be read again.
		f.known[a.RunID] = max(latest[a.RunID], last[a.RunID])
	}
	if !more {
		f.endedSince = now.Add(-endedSlack)
	}
	return inTimeOrder(evs), more, nil
}

// inTimeOrder orders events (grouped by run, in sequence order) by time
// while keeping each run's sequence order: an event is placed no earlier
// than its run's previous event, even if its own time is earlier (its
// transaction started first but committed second).
func inTimeOrder(evs []*wfv1.RunEvent) []keyed {
	out := make([]keyed, len(evs))
	var prev keyed
	for i, ev := range evs {
		k := keyed{ev: ev, key: ev.GetTime().AsTime()}
		if i > 0 && prev.ev.RunId == ev.RunId {
			k.key = maxTime(k.key, prev.key)
		}
		out[i], prev = k, k
	}
	slices.SortStableFunc(out, func(a, b keyed) int {
		if c := a.key.Compare(b.key); c != 0 {
			return c
		}
		if c := strings.Compare(a.ev.RunId, b.ev.RunId); c != 0 {
			return c
		}
		return int(a.ev.Sequence - b.ev.Sequence)
	})
	return out
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// StreamEvents implements wayfinder.v1.RunService.
func (s *RunService) StreamEvents(req *wfv1.StreamEventsRequest, stream grpc.ServerStreamingServer[wfv1.RunEvent]) error {
	ctx := stream.Context()
	var from EventCursor
	if t := req.GetAfterTime(); t != nil {
		if err := t.CheckValid(); err != nil {
			var v fault.Violations
			v.Add("after_time", "not a valid timestamp")
			return v.Err()
		}
		from.Time = t.AsTime()
	}
	if from.Time.IsZero() {
		// Fix "now" before telling the client the stream is open, so that
		// what it does next is streamed.
		now, err := s.cfg.Store.Now(ctx)
		if err != nil {
			return err
		}
		from.Time = now
	}
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	var last time.Time
	err := s.FollowEvents(ctx, from, req.GetTypes(), func(ev *wfv1.RunEvent, c EventCursor) error {
		if err := sendWithin(SendStall, func() error { return stream.Send(ev) }); err != nil {
			return err
		}
		last = c.Time
		return nil
	})
	if errors.Is(err, errStalled) {
		s.cfg.Logger.WarnContext(ctx, "event stream client too slow; disconnected", "stream", "tenant",
			"tenant", tenant.ID(ctx), "stall", SendStall)
		return status.Errorf(codes.ResourceExhausted,
			"the client took no event for %s; resume with after_time=%s (events of the last seconds may repeat)",
			SendStall, last.Add(-ResumeOverlap).UTC().Format(time.RFC3339Nano))
	}
	return err
}

// ErrorStatus is the gRPC status of an error of the service, as its
// interceptors return it (for transports outside gRPC).
func ErrorStatus(ctx context.Context, logger *slog.Logger, err error) *status.Status {
	return status.Convert(toStatus(ctx, logger, "", err))
}

// AuthenticateHTTP identifies the caller of an HTTP request served outside
// the gRPC gateway (Server-Sent Events) exactly as the RPCs do, from its API
// key: the Authorization header ("Bearer <key>"), or else the access_token
// query parameter (for browsers' EventSource, which cannot set headers).
// It returns the request's context carrying the caller.
func (a *Authenticator) AuthenticateHTTP(r *http.Request) (context.Context, error) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if tok := r.URL.Query().Get("access_token"); tok != "" {
			auth = "Bearer " + tok
		}
	}
	ctx := r.Context()
	if auth != "" {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", auth))
	}
	return a.authenticate(ctx, wfv1.RunService_StreamEvents_FullMethodName)
}
