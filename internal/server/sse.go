package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// Server-Sent Events for browsers (EventSource):
//
//	GET /v1/runs/{run_id}/events:sse  one run's events; id: is the sequence
//	GET /v1/events:sse                all the caller's runs; id: is a cursor
//
// Each event is "id: …", "event: <RunEventType>" and "data: <RunEvent as
// JSON with proto field names>". Last-Event-ID (or ?last_event_id=)
// resumes; a run stream ends after FINISHED and, asked again past it,
// answers 204 so that EventSource stops reconnecting. A comment line is
// sent every sseHeartbeat so proxies keep idle streams open. The caller is
// authenticated by the API's own Authenticator (Authorization header, or
// ?access_token= since EventSource cannot set headers), and the streams
// are the RunService's, so tenant checks are the API's.

const (
	// sseHeartbeat is how often a comment line is sent.
	sseHeartbeat = 15 * time.Second
	// sseRetry is the reconnection delay EventSource is told.
	sseRetry = 2 * time.Second
)

// heartbeats writes a comment line every sseHeartbeat until ctx ends; a
// failed write ends the stream (cancel).
func heartbeats(ctx context.Context, cancel context.CancelCauseFunc, write func(string) error) {
	t := time.NewTicker(sseHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := write(": heartbeat\n\n"); err != nil {
				cancel(err)
				return
			}
		}
	}
}

// sseHandler serves the event streams as Server-Sent Events.
type sseHandler struct {
	// serving ends when the server shuts down; so do the streams.
	serving context.Context
	store   *store.Store
	runs    *api.RunService
	authn   *api.Authenticator
	logger  *slog.Logger
}

func newSSE(serving context.Context, d apiDeps) *sseHandler {
	return &sseHandler{
		serving: serving,
		store:   d.store,
		runs:    api.NewRunService(api.Config{Store: d.store, Hub: d.hub, Logger: d.logger}),
		authn:   &api.Authenticator{Store: d.store, Local: d.local},
		logger:  d.logger,
	}
}

// lastEventID is the position the client asks to resume after.
func lastEventID(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return r.URL.Query().Get("last_event_id")
}

// runEvents serves GET /v1/runs/{run_id}/events:sse.
func (h *sseHandler) runEvents(w http.ResponseWriter, r *http.Request) {
	ctx, err := h.authn.AuthenticateHTTP(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	runID := r.PathValue("run_id")
	var after int64
	if id := cmp.Or(lastEventID(r), r.URL.Query().Get("after_sequence")); id != "" {
		if after, err = strconv.ParseInt(id, 10, 64); err != nil || after < 0 {
			var v fault.Violations
			v.Add("last_event_id", "must be the sequence number of the last event received")
			h.fail(w, r, v.Err())
			return
		}
	}
	run, err := h.runs.GetRun(ctx, &wfv1.GetRunRequest{RunId: runID})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if store.IsTerminal(run.Status) && after >= run.LastEventSequence {
		w.WriteHeader(http.StatusNoContent) // EventSource stops reconnecting
		return
	}
	h.stream(ctx, w, r, func(ctx context.Context, s *sseWriter) error {
		return h.runs.FollowRunEvents(ctx, runID, after, func(ev *wfv1.RunEvent) error {
			return s.event(strconv.FormatInt(ev.Sequence, 10), ev)
		})
	}, "run_id", runID)
}

// tenantEvents serves GET /v1/events:sse.
func (h *sseHandler) tenantEvents(w http.ResponseWriter, r *http.Request) {
	ctx, err := h.authn.AuthenticateHTTP(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var from api.EventCursor
	switch {
	case lastEventID(r) != "":
		if from, err = api.ResumeAfter(lastEventID(r)); err != nil {
			h.fail(w, r, err)
			return
		}
	case q.Get("after_time") != "":
		t, err := time.Parse(time.RFC3339Nano, q.Get("after_time"))
		if err != nil {
			var v fault.Violations
			v.Add("after_time", "must be an RFC 3339 time")
			h.fail(w, r, v.Err())
			return
		}
		from.Time = t
	}
	types, err := eventTypes(q["types"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if from.Time.IsZero() {
		// Fix "now" before the client learns the stream is open, so that
		// what it does next is streamed.
		if from.Time, err = h.store.Now(ctx); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.stream(ctx, w, r, func(ctx context.Context, s *sseWriter) error {
		return h.runs.FollowEvents(ctx, from, types, func(ev *wfv1.RunEvent, c api.EventCursor) error {
			return s.event(c.String(), ev)
		})
	}, "stream", "tenant")
}

// eventTypes parses ?types= values: RunEventType names, with or without
// the RUN_EVENT_TYPE_ prefix, repeated or comma-separated.
func eventTypes(values []string) ([]wfv1.RunEventType, error) {
	var out []wfv1.RunEventType
	var v fault.Violations
	for _, val := range values {
		for name := range strings.SplitSeq(val, ",") {
			name = strings.ToUpper(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			n, ok := wfv1.RunEventType_value[name]
			if !ok {
				n, ok = wfv1.RunEventType_value["RUN_EVENT_TYPE_"+name]
			}
			if !ok || n == 0 {
				v.Add("types", "unknown event type %q", name)
				continue
			}
			out = append(out, wfv1.RunEventType(n))
		}
	}
	return out, v.Err()
}

// stream answers with an event stream and runs follow until it ends, the
// client goes away, or the client stops reading (a write blocked for
// api.SendStall).
func (h *sseHandler) stream(ctx context.Context, w http.ResponseWriter, r *http.Request,
	follow func(context.Context, *sseWriter) error, logArgs ...any) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// At shutdown the stream ends; the client reconnects to another replica.
	defer context.AfterFunc(h.serving, func() { cancel(context.Cause(h.serving)) })()
	s := &sseWriter{w: w, rc: http.NewResponseController(w), stall: api.SendStall}
	defer func() { _ = s.rc.SetWriteDeadline(time.Time{}) }()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := s.write(fmt.Sprintf("retry: %d\n\n", sseRetry.Milliseconds())); err != nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	wg.Go(func() { heartbeats(ctx, cancel, s.write) })
	err := follow(ctx, s)
	if werr := s.failed(); werr != nil {
		err = werr
	}
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.logger.WarnContext(r.Context(), "event stream client too slow; disconnected", append(logArgs,
			"transport", "sse", "stall", api.SendStall)...)
	case r.Context().Err() != nil, h.serving.Err() != nil:
		// The client went away, or the server is shutting down (the
		// client reconnects, to another replica).
	default:
		st := api.ErrorStatus(ctx, h.logger, err)
		raw, _ := protojson.Marshal(st.Proto())
		_ = s.write("event: error\ndata: " + string(raw) + "\n\n")
	}
}

// fail answers a request that cannot be streamed with the API's JSON error.
func (h *sseHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := api.ErrorStatus(r.Context(), h.logger, err)
	raw, _ := protojson.Marshal(st.Proto())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(runtime.HTTPStatusFromCode(st.Code()))
	_, _ = w.Write(raw)
}

// sseWriter writes a stream's frames, each flushed at once and bounded by
// a write deadline, from the stream and its heartbeat.
type sseWriter struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	err   error
}

var eventJSON = protojson.MarshalOptions{UseProtoNames: true}

// event writes one event.
func (s *sseWriter) event(id string, ev *wfv1.RunEvent) error {
	raw, err := eventJSON.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	var b strings.Builder
	b.Grow(len(raw) + 64)
	fmt.Fprintf(&b, "id: %s\nevent: %s\n", id, ev.GetType())
	// protojson writes one line; a data field must never hold a newline.
	for line := range strings.SplitSeq(string(raw), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return s.write(b.String())
}

func (s *sseWriter) write(frame string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
	if _, err := s.w.Write([]byte(frame)); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
	return s.err
}

// failed returns the first write error.
func (s *sseWriter) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
