package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// A run's live view for browsers:
//
//	GET /v1/runs/{run_id}/live:sse[?max_fps=N]
//
// Each frame is "event: frame" and "data: <LiveFrame as JSON with proto
// field names; the JPEG base64-encoded>". Frames carry no id: they are not
// resumable, a reconnection starts at the newest frame. The stream is the
// LiveService's WatchLive, called in process with the caller authenticated
// by the API's Authenticator (Authorization header or ?access_token=), so
// tenant checks and limits are the API's. The response starts with the
// first frame (or the first heartbeat): until then a refusal is answered
// as the API's JSON error with its HTTP status (404 for another tenant's
// run, 400 FAILED_PRECONDITION while the run has no live view). A
// finished run answers 204, so that EventSource stops reconnecting; the
// stream ends when the run does.

// liveSSE serves the live view stream.
type liveSSE struct {
	sse  *sseHandler
	live wfv1.LiveServiceServer
}

// newLiveSSE returns the live view stream of live, sharing sse's
// authentication, run lookups and shutdown.
func newLiveSSE(sse *sseHandler, live wfv1.LiveServiceServer) *liveSSE {
	return &liveSSE{sse: sse, live: live}
}

// register adds the live view route to mux.
func (l *liveSSE) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/runs/{run_id}/live:sse", l.serve)
}

// serve serves GET /v1/runs/{run_id}/live:sse.
func (l *liveSSE) serve(w http.ResponseWriter, r *http.Request) {
	h := l.sse
	ctx, err := h.authn.AuthenticateHTTP(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	runID := r.PathValue("run_id")
	var maxFPS int64
	if s := r.URL.Query().Get("max_fps"); s != "" {
		if maxFPS, err = strconv.ParseInt(s, 10, 32); err != nil {
			var v fault.Violations
			v.Add("max_fps", "must be a whole number of frames a second")
			h.fail(w, r, v.Err())
			return
		}
	}
	run, err := h.runs.GetRun(ctx, &wfv1.GetRunRequest{RunId: runID})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if store.IsTerminal(run.Status) {
		w.WriteHeader(http.StatusNoContent) // EventSource stops reconnecting
		return
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// At shutdown the stream ends; the client reconnects to another replica.
	defer context.AfterFunc(h.serving, func() { cancel(context.Cause(h.serving)) })()
	s := &liveStream{w: w, sw: &sseWriter{w: w, rc: http.NewResponseController(w), stall: api.SendStall}}
	defer func() { _ = s.sw.rc.SetWriteDeadline(time.Time{}) }()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	wg.Go(func() { heartbeats(ctx, cancel, s.write) })
	err = l.live.WatchLive(&wfv1.WatchLiveRequest{RunId: runID, MaxFps: int32(maxFPS)},
		&frameStream{ctx: ctx, send: s.frame})
	if werr := s.sw.failed(); werr != nil {
		err = werr
	}
	cancel(nil)
	wg.Wait() // the heartbeat no longer writes
	switch {
	case err == nil:
		if !s.started() {
			w.WriteHeader(http.StatusNoContent) // the run ended before a frame
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.logger.WarnContext(r.Context(), "live view client too slow; disconnected",
			"run_id", runID, "transport", "sse", "stall", api.SendStall)
	case r.Context().Err() != nil, h.serving.Err() != nil:
		// The client went away, or the server is shutting down.
	case !s.started():
		h.fail(w, r, err)
	default:
		st := api.ErrorStatus(ctx, h.logger, err)
		raw, _ := protojson.Marshal(st.Proto())
		_ = s.sw.write("event: error\ndata: " + string(raw) + "\n\n")
	}
}

// liveStream is an event stream whose response starts with its first
// write, so that a call refused before any frame is answered with an HTTP
// error status instead of an empty stream.
type liveStream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	sw   *sseWriter
	open bool
}

// started reports whether the response has started.
func (s *liveStream) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// write starts the response if needed, then writes frame.
func (s *liveStream) write(frame string) error {
	s.mu.Lock()
	if !s.open {
		s.open = true
		hdr := s.w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
		s.w.WriteHeader(http.StatusOK)
		frame = fmt.Sprintf("retry: %d\n\n", sseRetry.Milliseconds()) + frame
	}
	s.mu.Unlock()
	return s.sw.write(frame)
}

// frame writes one live frame.
func (s *liveStream) frame(f *wfv1.LiveFrame) error {
	raw, err := eventJSON.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode live frame: %w", err)
	}
	var b strings.Builder
	b.Grow(len(raw) + 32)
	b.WriteString("event: frame\n")
	// protojson writes one line; a data field must never hold a newline.
	for line := range strings.SplitSeq(string(raw), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return s.write(b.String())
}

// frameStream is the server side of a WatchLive stream, called in
// process: what the service sends goes to send.
type frameStream struct {
	ctx  context.Context
	send func(*wfv1.LiveFrame) error
}

func (f *frameStream) Send(frame *wfv1.LiveFrame) error { return f.send(frame) }
func (f *frameStream) Context() context.Context         { return f.ctx }
func (f *frameStream) SetHeader(metadata.MD) error      { return nil }
func (f *frameStream) SendHeader(metadata.MD) error     { return nil }
func (f *frameStream) SetTrailer(metadata.MD)           {}

func (f *frameStream) SendMsg(m any) error {
	frame, ok := m.(*wfv1.LiveFrame)
	if !ok {
		return fmt.Errorf("live stream: cannot send %T", m)
	}
	return f.send(frame)
}

func (f *frameStream) RecvMsg(any) error {
	return errors.New("live stream: nothing to receive")
}
