package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/proto"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// liveFormPage has a button and a field at fixed places in the viewport
// (CSS px), so that clicks on the live picture can be aimed at them. Enter
// in the field writes how many characters it holds.
const liveFormPage = `<!doctype html><title>Live form</title>
<style>body{margin:0} #b{position:absolute;left:40px;top:40px;width:200px;height:60px}
#f{position:absolute;left:40px;top:160px;width:300px;height:40px} #out{position:absolute;left:40px;top:260px}</style>
<button id="b" onclick="document.getElementById('out').textContent='button pressed'">Press me</button>
<input id="f" aria-label="Nickname">
<p id="out">waiting</p>
<script>document.getElementById('f').addEventListener('keydown', e => {
  if (e.key === 'Enter') document.getElementById('out').textContent = 'entered ' + e.target.value.length })</script>`

// Centers of the page's button and field, in the viewport's CSS px.
var (
	liveButtonAt = proto.Point{X: 140, Y: 70}
	liveFieldAt  = proto.Point{X: 190, Y: 180}
)

// newLiveFormSite serves liveFormPage on 127.0.0.1.
func newLiveFormSite(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, liveFormPage)
	}))
	t.Cleanup(s.Close)
	return s
}

// liveModel scrolls in its first turn (a step the person can take over
// after) and completes the task in every later one.
func liveModel(t *testing.T) *gatedModel {
	t.Helper()
	return newGatedModel(t, func(turn int) llm.ToolCall {
		if turn == 1 {
			return llm.Call("browser_scroll", map[string]any{"direction": "down", "amount": 10, "confidence": 0.9})
		}
		return llm.Call("complete_task", map[string]any{"status": "success", "reason": "the person did it"})
	})
}

// TestLiveDashboardTakeover drives a takeover from the dashboard in
// Chromium: the run's screen shows live, "Take over" pauses the run after
// its step, clicks and keys on the picture reach the run's page (aimed by
// the frame's viewport size against the picture's shown size), and "Hand
// back" with a note gives the browser back. What the person did is a step
// by actor "human" in the API and in the timeline, and the model is told,
// with the note.
func TestLiveDashboardTakeover(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	site := newLiveFormSite(t)
	model := liveModel(t)
	runID := createRunREST(t, base, modelRunParams("Press the button and fill the nickname", site.URL+"/", model))
	logRunOnFailure(t, ts, runID)

	// The model's first call is held: the run is RUNNING on its page.
	model.waitCall(t, 1)
	page := openDashboard(t, base+"/ui/#/runs/"+runID)
	page.el(`.live-panel[data-takeover="none"]`)
	page.waitJS(`() => { const i = document.querySelector('.live-panel img.live-image');
		return i && i.src.startsWith('data:image/jpeg;base64,') && i.complete && i.naturalWidth > 0 }`)
	page.el(`.live-screen[data-width][data-height]`)
	page.shot("live-view")

	// Taking over waits for the step in progress.
	page.click(`.live-panel button.take-over`)
	page.el(`.live-panel[data-takeover="TAKEOVER_STATE_REQUESTED"]`)
	require.False(t, page.has(`.live-panel .hand-back-form:not([hidden])`), "no input before the run paused")
	model.release(1)
	page.el(`.live-panel[data-takeover="TAKEOVER_STATE_ACTIVE"] .hand-back-form:not([hidden])`)
	page.shot("live-takeover")

	// Click the button and the field on the picture, type, paste, Enter.
	page.clickLive(liveButtonAt)
	page.clickLive(liveFieldAt)
	require.NoError(t, page.p.Keyboard.Type(input.KeyH, input.KeyE, input.KeyL, input.KeyL, input.KeyO))
	page.eval(`() => {
		const dt = new DataTransfer();
		dt.setData('text/plain', 'abc');
		document.querySelector('.live-screen').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
	}`)
	require.NoError(t, page.p.Keyboard.Type(input.Enter))
	require.Equal(t, true, page.eval(`() => document.activeElement === document.querySelector('.live-screen')`),
		"the keys went to the live view, not the dashboard")

	note := "I pressed it and filled in the nickname"
	page.input(`.hand-back-form textarea[name="note"]`, note)
	page.click(`.hand-back-form button.hand-back`)
	page.el(`.live-panel[data-takeover="none"]`)

	// The model is told, with the note, and sees the page as it was left.
	text := callText(model.waitCall(t, 2))
	require.Contains(t, text, note)
	require.Contains(t, text, `button "Press me"`)
	require.Contains(t, text, `textbox "Nickname" = "helloabc"`, "the keys and the paste reached the run's page, in order")
	model.release(2)

	// The run ends; the live view closes; the person's step shows apart.
	page.el(`.run-header .status[data-status="RUN_STATUS_COMPLETED"]`)
	page.waitJS(`() => !document.querySelector('.live-panel')`)
	page.el(`li.step.human[data-actor="human"] .action[data-tool="human_click"]`)
	page.el(`li.step.human .action[data-tool="human_type"]`)
	page.shot("live-human-step")

	steps, err := ts.client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: runID})
	require.NoError(t, err)
	var human *wfv1.Step
	for _, s := range steps.Steps {
		if s.Actor == "human" {
			human = s
		}
	}
	require.NotNil(t, human, "a step by a person: %s", describeSteps(t, ts.client, runID))
	var clicked []string
	characters := 0.0
	for _, a := range human.Actions {
		args := a.GetArguments().GetFields()
		switch a.Tool {
		case "human_click":
			clicked = append(clicked, args["target"].GetStringValue())
		case "human_type":
			characters += args["characters"].GetNumberValue()
		}
	}
	require.Contains(t, strings.Join(clicked, "\n"), `button "Press me"`, "the click on the picture hit the button")
	require.EqualValues(t, 8, characters, "five keys and a paste of three")
	raw, err := protojson.Marshal(steps)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "hello", "typed text is not recorded")
	page.noErrors()
}

// clickLive clicks the live picture where the run's viewport point at
// (CSS px) is shown, scaled by the frame's size against the picture's.
func (u *uiPage) clickLive(at proto.Point) {
	u.t.Helper()
	res, err := u.p.Eval(`(x, y) => {
		const s = document.querySelector('.live-screen');
		const r = s.querySelector('img.live-image').getBoundingClientRect();
		return { x: r.left + x * r.width / Number(s.dataset.width), y: r.top + y * r.height / Number(s.dataset.height) };
	}`, at.X, at.Y)
	require.NoError(u.t, err)
	p := proto.Point{X: res.Value.Get("x").Num(), Y: res.Value.Get("y").Num()}
	require.NoError(u.t, u.p.Mouse.MoveTo(p))
	require.NoError(u.t, u.p.Mouse.Click(proto.InputMouseButtonLeft, 1))
}

// TestLiveSSE: GET /v1/runs/{id}/live:sse streams the run's frames as
// "frame" events (LiveFrame JSON, the JPEG base64) to its tenant's key,
// given as access_token as EventSource must; another tenant's key sees no
// such run, no key is refused, and once the run ends the stream ends and a
// new one is answered 204.
func TestLiveSSE(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true, adminKey: testAdminKey})
	base := "http://" + ts.addrs.HTTP
	actx := as(context.Background(), testAdminKey)
	admin := wfv1.NewAccessServiceClient(ts.conn)
	a := newTenant(t, actx, admin, ts.conn, "live-a")
	b := newTenant(t, actx, admin, ts.conn, "live-b")
	site := newLiveFormSite(t)
	model := liveModel(t)

	body, err := json.Marshal(modelRunParams("Press the button", site.URL+"/", model))
	require.NoError(t, err)
	var run struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodPost, base+"/v1/runs", a.key, string(body), &run))
	logRunOnFailure(t, ts, run.ID)
	model.waitCall(t, 1)
	sse := base + "/v1/runs/" + run.ID + "/live:sse"

	for _, tc := range []struct {
		name, url, key string
		status         int
	}{
		{name: "no key", url: sse, status: http.StatusUnauthorized},
		{name: "other tenant", url: sse, key: b.key, status: http.StatusNotFound},
		{name: "other tenant token", url: sse + "?access_token=" + url.QueryEscape(b.key), status: http.StatusNotFound},
		{name: "no such run", url: base + "/v1/runs/00000000-0000-0000-0000-000000000000/live:sse", key: a.key, status: http.StatusNotFound},
		{name: "bad max_fps", url: sse + "?max_fps=fast", key: a.key, status: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.status, restJSONKey(t, http.MethodGet, tc.url, tc.key, "", nil))
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), uiWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sse+"?max_fps=5&access_token="+url.QueryEscape(a.key), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := bufio.NewReader(resp.Body)

	ev := nextSSEEvent(t, events)
	require.Equal(t, "frame", ev.event)
	require.Empty(t, ev.id, "frames are not resumable")
	var frame wfv1.LiveFrame
	require.NoError(t, protojson.Unmarshal([]byte(ev.data), &frame))
	require.Contains(t, ev.data, `"data":`, "proto field names")
	img, err := jpeg.Decode(bytes.NewReader(frame.Data))
	require.NoError(t, err, "frames are JPEGs")
	require.Positive(t, img.Bounds().Dx())
	require.Positive(t, frame.Width)
	require.Positive(t, frame.Height)
	require.Positive(t, frame.Sequence)
	require.Equal(t, site.URL+"/", frame.Url)
	require.Nil(t, frame.Takeover, "the model has the browser")

	// The run ends: so does the stream, and the live view is gone.
	model.release(1)
	model.release(2)
	for {
		ev, err := readSSEEvent(events)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "frame", ev.event, "%s", ev.data)
	}
	final := pollFinished(t, a.ctx, a.runs, run.ID)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.Equal(t, http.StatusNoContent, restJSONKey(t, http.MethodGet, sse, a.key, "", nil))
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ id, event, data string }

// readSSEEvent reads the next event (comments and retry: lines skipped);
// io.EOF at the end of the stream.
func readSSEEvent(r *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && (line != "" || data != nil) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if data != nil {
				ev.data = strings.Join(data, "\n")
				return ev, nil
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

func nextSSEEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	ev, err := readSSEEvent(r)
	require.NoError(t, err)
	return ev
}
