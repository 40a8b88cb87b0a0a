package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// sseFrame is one frame of a Server-Sent Events stream: an event, or a
// comment (heartbeat).
type sseFrame struct {
	id, event, data string
	comment         string
	retry           string
}

// sseStream reads a Server-Sent Events response.
type sseStream struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openSSE GETs url with the given headers; the stream is closed when the
// test ends.
func openSSE(t *testing.T, url string, header http.Header) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	s := &sseStream{resp: resp, r: bufio.NewReaderSize(resp.Body, 1<<20), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next returns the next frame; io.EOF when the stream ended.
func (s *sseStream) next() (sseFrame, error) {
	var f sseFrame
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && seen {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return f, nil
			}
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			f.comment = value
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			if f.data != "" {
				f.data += "\n"
			}
			f.data += value
		case "retry":
			f.retry = value
		}
	}
}

// events reads events until the stream ends (or until stop says so),
// skipping comments; it checks every event's framing.
func (s *sseStream) events(t *testing.T, stop func(*wfv1.RunEvent) bool) ([]*wfv1.RunEvent, []string) {
	t.Helper()
	var evs []*wfv1.RunEvent
	var ids []string
	for {
		f, err := s.next()
		if err == io.EOF {
			return evs, ids
		}
		require.NoError(t, err)
		if f.event == "" {
			continue
		}
		require.NotEqual(t, "error", f.event, "stream error: %s", f.data)
		ev := &wfv1.RunEvent{}
		require.NoError(t, protojson.Unmarshal([]byte(f.data), ev), f.data)
		require.Equal(t, ev.Type.String(), f.event)
		require.Contains(t, f.data, `"run_id"`, "data uses proto field names")
		evs, ids = append(evs, ev), append(ids, f.id)
		if stop != nil && stop(ev) {
			return evs, ids
		}
	}
}

// sequences lists the events' sequence numbers.
func sequences(evs []*wfv1.RunEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Sequence
	}
	return out
}

func upTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// pagesSite serves /page/<n>, each page a different one (a run that only
// sees the same page ends as stuck). With pad > 0 each page redirects to a
// URL padded with pad characters and has a title as long, which makes each
// step's events that much larger.
func pagesSite(t *testing.T, pad int) string {
	padding := strings.Repeat("x", pad)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, padded := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/page/"), "/"+padding)
		if pad > 0 && !padded {
			http.Redirect(w, r, r.URL.Path+"/"+padding, http.StatusFound)
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>Page %[1]s %[2]s</title><h1>Hello from the test site</h1><p>This is page %[1]s.</p>`,
			n, padding)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// stepsParams is a run of the pages site (pagesSite) that opens n pages,
// one a step, then checks the last.
func stepsParams(t *testing.T, n, pad int) *wfv1.RunParams {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Open /page/%d\n", i+1)
	}
	b.WriteString("Expect text Hello from the test site\n")
	return &wfv1.RunParams{Goal: b.String(), StartUrl: pagesSite(t, pad) + "/page/0", AllowedDomains: []string{"127.0.0.1"},
		MaxSteps: int32(n + 5)}
}

// TestSSEResume: a browser's run stream resumes after a disconnect with
// Last-Event-ID (and ?last_event_id=) without losing or repeating an event,
// ends after FINISHED and then answers 204; events carry step thumbnails.
func TestSSEResume(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	run, err := ts.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: stepsParams(t, 3, 0)})
	require.NoError(t, err)
	url := "http://" + ts.addrs.HTTP + "/v1/runs/" + run.Id + "/events:sse"

	first := openSSE(t, url, nil)
	require.Equal(t, http.StatusOK, first.resp.StatusCode)
	require.Equal(t, "text/event-stream", first.resp.Header.Get("Content-Type"))
	f, err := first.next()
	require.NoError(t, err)
	require.Equal(t, "2000", f.retry, "the stream opens with a retry hint")
	head, ids := first.events(t, func(ev *wfv1.RunEvent) bool { return ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED })
	for i, ev := range head {
		require.Equal(t, strconv.FormatInt(ev.Sequence, 10), ids[i], "a run stream's id is the sequence")
	}
	first.close()

	second := openSSE(t, url, http.Header{"Last-Event-ID": {ids[len(ids)-1]}})
	middle, ids := second.events(t, func(ev *wfv1.RunEvent) bool { return ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED })
	second.close()
	third := openSSE(t, url+"?last_event_id="+ids[len(ids)-1], nil)
	tail, ids := third.events(t, nil)

	all := append(append(head, middle...), tail...)
	require.Equal(t, upTo(int64(len(all))), sequences(all), "events lost or repeated across reconnects")
	final := all[len(all)-1]
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, final.Type, "the stream ends after FINISHED")
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.GetRun().Status)

	// EventSource reconnects after the end: 204 stops it.
	resp, err := http.Get(url + "?last_event_id=" + ids[len(ids)-1])
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	// Every finished step names a 320-px JPEG thumbnail of its screenshot.
	steps := 0
	for _, ev := range all {
		if ev.Type != wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED {
			continue
		}
		steps++
		st := ev.GetStep()
		require.NotEmpty(t, st.ThumbnailMediaId, "step %d", st.Number)
		require.NotEqual(t, st.ScreenshotMediaId, st.ThumbnailMediaId)
		m, err := ts.client.GetMedia(context.Background(), &wfv1.GetMediaRequest{MediaId: st.ThumbnailMediaId})
		require.NoError(t, err)
		require.Equal(t, "image/jpeg", m.ContentType)
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(m.Data))
		require.NoError(t, err)
		require.Equal(t, 320, cfg.Width)
	}
	require.GreaterOrEqual(t, steps, 3)
	listed, err := ts.client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	for _, st := range listed.Steps {
		require.NotEmpty(t, st.ThumbnailMediaId, "step %d record", st.Number)
	}

	for _, bad := range []struct {
		url    string
		status int
	}{
		{"http://" + ts.addrs.HTTP + "/v1/runs/00000000-0000-0000-0000-000000000000/events:sse", http.StatusNotFound},
		{url + "?last_event_id=x", http.StatusBadRequest},
		{"http://" + ts.addrs.HTTP + "/v1/events:sse?types=NOT_A_TYPE", http.StatusBadRequest},
		{"http://" + ts.addrs.HTTP + "/v1/events:sse", http.StatusOK},
	} {
		resp, err := http.Get(bad.url)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, bad.status, resp.StatusCode, bad.url)
	}
}

// TestGRPCResume: a gRPC run stream resumes with after_sequence.
func TestGRPCResume(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	run, err := ts.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: stepsParams(t, 2, 0)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := ts.client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: run.Id})
	require.NoError(t, err)
	var head []*wfv1.RunEvent
	for len(head) < 3 {
		ev, err := stream.Recv()
		require.NoError(t, err)
		head = append(head, ev)
	}
	cancel()
	tail := collectEvents(t, ts.client, run.Id, head[len(head)-1].Sequence)
	all := append(head, tail...)
	require.Equal(t, upTo(int64(len(all))), sequences(all))
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, all[len(all)-1].Type)
}

// collectTenant follows a tenant stream until the run's FINISHED event and
// returns the run's events.
func collectTenant(t *testing.T, stream grpc.ServerStreamingClient[wfv1.RunEvent], runID string) []*wfv1.RunEvent {
	t.Helper()
	var evs []*wfv1.RunEvent
	for {
		ev, err := stream.Recv()
		require.NoError(t, err)
		if ev.RunId != runID {
			continue
		}
		evs = append(evs, ev)
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
			return evs
		}
	}
}

// TestStreamsAcrossReplicas: a run executed by one server is streamed live
// from another (an API-only replica on the same database), over gRPC and
// SSE, run and tenant streams alike.
func TestStreamsAcrossReplicas(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	apiOnly := startServer(t, dbURL, serverOpts{role: config.RoleAPI})
	worker := startServer(t, dbURL, serverOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	tenantStream, err := apiOnly.client.StreamEvents(ctx, &wfv1.StreamEventsRequest{})
	require.NoError(t, err)
	filtered, err := apiOnly.client.StreamEvents(ctx, &wfv1.StreamEventsRequest{
		Types: []wfv1.RunEventType{wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED}})
	require.NoError(t, err)
	tenantSSE := openSSE(t, "http://"+apiOnly.addrs.HTTP+"/v1/events:sse", nil)
	// The streams are open (their headers arrived) before the run exists.
	_, err = tenantStream.Header()
	require.NoError(t, err)
	_, err = filtered.Header()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, tenantSSE.resp.StatusCode)

	// Created on the worker's replica, so nothing of it passes through the
	// API-only one but the database.
	run, err := worker.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: stepsParams(t, 2, 0)})
	require.NoError(t, err)
	runSSE := openSSE(t, "http://"+apiOnly.addrs.HTTP+"/v1/runs/"+run.Id+"/events:sse", nil)

	byRun := collectEvents(t, apiOnly.client, run.Id, 0)
	require.Equal(t, upTo(int64(len(byRun))), sequences(byRun))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, byRun[len(byRun)-1].GetRun().Status)

	viaTenant := collectTenant(t, tenantStream, run.Id)
	require.Equal(t, sequences(byRun), sequences(viaTenant), "the tenant stream lost or reordered events")

	var want []int64
	for _, ev := range byRun {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED || ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
			want = append(want, ev.Sequence)
		}
	}
	require.Equal(t, want, sequences(collectTenant(t, filtered, run.Id)), "type filter")

	sseRun, _ := runSSE.events(t, nil)
	require.Equal(t, sequences(byRun), sequences(sseRun))

	sseTenant, cursors := tenantSSE.events(t, func(ev *wfv1.RunEvent) bool {
		return ev.RunId == run.Id && ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED
	})
	require.Equal(t, sequences(byRun), sequences(sseTenant))
	require.NotEqual(t, strconv.FormatInt(sseTenant[0].Sequence, 10), cursors[0], "a tenant stream's id is a cursor")

	// Resuming the tenant stream from its third event repeats at most the
	// overlap window and loses nothing.
	resumed := openSSE(t, "http://"+apiOnly.addrs.HTTP+"/v1/events:sse", http.Header{"Last-Event-ID": {cursors[2]}})
	again, _ := resumed.events(t, func(ev *wfv1.RunEvent) bool { return ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED })
	require.NotEmpty(t, again)
	require.Greater(t, again[0].Sequence, int64(3), "the cursor's own run resumes after its sequence")
	require.Equal(t, upTo(byRun[len(byRun)-1].Sequence)[again[0].Sequence-1:], sequences(again))

	// after_time in the past replays: the whole run.
	replay, err := apiOnly.client.StreamEvents(ctx, &wfv1.StreamEventsRequest{
		AfterTime: timestamppb.New(byRun[0].Time.AsTime().Add(-time.Second))})
	require.NoError(t, err)
	require.Equal(t, sequences(byRun), sequences(collectTenant(t, replay, run.Id)))

	// And over REST (newline-delimited JSON), with a type filter.
	after := byRun[0].Time.AsTime().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	rest := openSSE(t, "http://"+apiOnly.addrs.HTTP+"/v1/events?types=RUN_EVENT_TYPE_FINISHED&after_time="+after, nil)
	require.Equal(t, http.StatusOK, rest.resp.StatusCode)
	line, err := rest.r.ReadString('\n')
	require.NoError(t, err)
	var wrapped struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &wrapped), line)
	ev := &wfv1.RunEvent{}
	require.NoError(t, protojson.Unmarshal(wrapped.Result, ev))
	require.Equal(t, run.Id, ev.RunId)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, ev.Type)
}

// TestHeartbeat: an idle SSE stream carries a comment line within the
// heartbeat interval (15s), so proxies keep it open.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	st := openSSE(t, "http://"+ts.addrs.HTTP+"/v1/events:sse", nil)
	for {
		f, err := st.next()
		require.NoError(t, err)
		if f.comment != "" {
			require.Equal(t, "heartbeat", f.comment)
			return
		}
		require.Empty(t, f.event, "an idle tenant got an event")
	}
}

// TestSlowClientCannotStallRun: clients that never read (gRPC with the
// smallest flow-control windows, raw SSE connections with a tiny receive
// buffer) cannot slow the run they watch; its record is complete. The gRPC
// client is disconnected with RESOURCE_EXHAUSTED naming where to resume,
// and resumes from there.
func TestSlowClientCannotStallRun(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts := startServer(t, storetest.NewDB(t), serverOpts{logs: logs})
	const steps = 20
	run, err := ts.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: stepsParams(t, steps, 4000)})
	require.NoError(t, err)

	// A gRPC client whose windows stay at 64 KB (no BDP growth), and which
	// never reads.
	slowConn, err := grpc.NewClient(ts.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	defer slowConn.Close()
	slow := wfv1.NewRunServiceClient(slowConn)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stuck, err := slow.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: run.Id})
	require.NoError(t, err)
	stuckTenant, err := slow.StreamEvents(ctx, &wfv1.StreamEventsRequest{AfterTime: run.CreateTime})
	require.NoError(t, err)
	for _, path := range []string{"/v1/runs/" + run.Id + "/events:sse", "/v1/events:sse"} {
		conn, err := net.Dial("tcp", ts.addrs.HTTP)
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, ts.addrs.HTTP)
		require.NoError(t, err)
	}

	final := pollFinished(t, context.Background(), ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%s %v\n%s", final.Summary, final.Error, describeSteps(t, ts.client, run.Id))
	all := collectEvents(t, ts.client, run.Id, 0)
	require.Equal(t, upTo(final.LastEventSequence), sequences(all), "the run's event log is incomplete")
	listed, err := ts.client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: run.Id, PageSize: 500})
	require.NoError(t, err)
	require.Len(t, listed.Steps, int(final.StepCount))
	require.Greater(t, int(final.StepCount), steps)

	// The server gives up on the stalled gRPC run stream after its stall
	// limit; the client then reads what was in flight and the reason.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"msg":"event stream client too slow; disconnected","stream":"run"`)
	}, 2*time.Minute, 100*time.Millisecond, "the stalled stream was never given up")
	var got []*wfv1.RunEvent
	var st *status.Status
	for {
		ev, err := stuck.Recv()
		if err != nil {
			st = status.Convert(err)
			break
		}
		got = append(got, ev)
	}
	require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
	require.NotEmpty(t, got)
	require.Less(t, len(got), len(all), "the stalled stream had everything already")
	require.Contains(t, st.Message(), fmt.Sprintf("after_sequence=%d", got[len(got)-1].Sequence))
	rest := collectEvents(t, ts.client, run.Id, got[len(got)-1].Sequence)
	require.Equal(t, sequences(all), sequences(append(got, rest...)), "resuming lost or repeated events")

	// The stalled tenant stream is given up too.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"msg":"event stream client too slow; disconnected","stream":"tenant"`)
	}, 2*time.Minute, 100*time.Millisecond)
	for {
		if _, err := stuckTenant.Recv(); err != nil {
			st = status.Convert(err)
			break
		}
	}
	require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
	require.Contains(t, st.Message(), "after_time=")
}

// TestStreamsTenantScoped: SSE takes the API's keys (header or
// access_token) and its tenant checks; a tenant's streams never carry
// another tenant's events.
func TestStreamsTenantScoped(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey})
	actx := as(context.Background(), testAdminKey)
	admin := wfv1.NewAccessServiceClient(ts.conn)
	a := newTenant(t, actx, admin, ts.conn, "streams-a")
	b := newTenant(t, actx, admin, ts.conn, "streams-b")
	base := "http://" + ts.addrs.HTTP

	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Minute)
	defer cancel()
	bStream, err := b.runs.StreamEvents(ctx, &wfv1.StreamEventsRequest{})
	require.NoError(t, err)
	_, err = bStream.Header()
	require.NoError(t, err)
	bSSE := openSSE(t, base+"/v1/events:sse?access_token="+b.key, nil)
	require.Equal(t, http.StatusOK, bSSE.resp.StatusCode)
	aSSE := openSSE(t, base+"/v1/events:sse", http.Header{"Authorization": {"Bearer " + a.key}})
	require.Equal(t, http.StatusOK, aSSE.resp.StatusCode)

	runA, err := a.runs.CreateRun(a.ctx, &wfv1.CreateRunRequest{Params: stepsParams(t, 1, 0)})
	require.NoError(t, err)
	pollFinished(t, a.ctx, a.runs, runA.Id)
	runB, err := b.runs.CreateRun(b.ctx, &wfv1.CreateRunRequest{Params: stepsParams(t, 1, 0)})
	require.NoError(t, err)

	// A sees its run; B's streams see B's run only, up to its end.
	evs, _ := aSSE.events(t, func(ev *wfv1.RunEvent) bool { return ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED })
	require.Equal(t, runA.Id, evs[0].RunId)
	for _, ev := range collectTenant(t, bStream, runB.Id) {
		require.Equal(t, runB.Id, ev.RunId)
	}
	evs, _ = bSSE.events(t, func(ev *wfv1.RunEvent) bool { return ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED })
	for _, ev := range evs {
		require.Equal(t, runB.Id, ev.RunId, "B's tenant stream carried A's event")
	}

	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		status int
	}{
		{"no key", base + "/v1/events:sse", nil, http.StatusUnauthorized},
		{"unknown key", base + "/v1/events:sse?access_token=wf_not-a-key", nil, http.StatusUnauthorized},
		{"another tenant's run", base + "/v1/runs/" + runA.Id + "/events:sse?access_token=" + b.key, nil, http.StatusNotFound},
		{"another tenant's run (header)", base + "/v1/runs/" + runA.Id + "/events:sse",
			http.Header{"Authorization": {"Bearer " + b.key}}, http.StatusNotFound},
		{"own run", base + "/v1/runs/" + runA.Id + "/events:sse", http.Header{"Authorization": {"Bearer " + a.key}}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openSSE(t, tc.url, tc.header)
			require.Equal(t, tc.status, st.resp.StatusCode)
			if tc.status == http.StatusOK {
				evs, _ := st.events(t, nil)
				require.Equal(t, runA.Id, evs[len(evs)-1].RunId)
			}
		})
	}
}
