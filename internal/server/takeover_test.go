package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// takeoverPage has a button and a field at fixed places, so a person's
// clicks can be aimed by coordinates.
const takeoverPage = `<!doctype html><title>Form</title>
<style>body{margin:0} #b{position:absolute;left:20px;top:20px;width:200px;height:50px}
#f{position:absolute;left:20px;top:120px;width:300px;height:30px}</style>
<button id="b">Press me</button>
<input id="f" type="password" aria-label="Passcode">
`

// TestTakeover: a person watches a run and takes it over, through the
// replica that executes it (the live view's in-process path) and through
// an API-only replica while another replica's worker executes the run
// (frames, the takeover and the input all travel through the database).
// What they did becomes a step by actor "human" (typed text not kept) and
// the model is told, with their note.
func TestTakeover(t *testing.T) {
	t.Parallel()
	for _, split := range []bool{false, true} {
		t.Run(map[bool]string{false: "one replica", true: "api and worker replicas"}[split], func(t *testing.T) {
			t.Parallel()
			testTakeover(t, split)
		})
	}
}

func testTakeover(t *testing.T, split bool) {
	db := storetest.NewDB(t)
	var front *testServer
	if split {
		startServer(t, db, serverOpts{allowPrivate: true, role: config.RoleWorker}) // executes the run
		front = startServer(t, db, serverOpts{allowPrivate: true, role: config.RoleAPI})
	} else {
		front = startServer(t, db, serverOpts{allowPrivate: true})
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, takeoverPage)
	}))
	t.Cleanup(site.Close)

	model := newGatedModel(t, func(turn int) llm.ToolCall {
		if turn == 1 {
			return llm.Call("browser_scroll", map[string]any{"direction": "down", "amount": 10, "confidence": 0.9})
		}
		return llm.Call("complete_task", map[string]any{"status": "success", "reason": "the person did it"})
	})
	p := modelRunParams("Press the button", site.URL+"/", model)
	runID := createRunREST(t, "http://"+front.addrs.HTTP, p)
	logRunOnFailure(t, front, runID)

	conn, err := grpc.NewClient(front.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	live := wfv1.NewLiveServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The model's first call is held: the run is RUNNING with its page open.
	model.waitCall(t, 1)
	watch, err := live.WatchLive(ctx, &wfv1.WatchLiveRequest{RunId: runID})
	require.NoError(t, err)
	frame, err := watch.Recv()
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(frame.Data))
	require.NoError(t, err, "frames are JPEGs")
	require.Positive(t, img.Bounds().Dx())
	require.Positive(t, frame.Width)
	require.Positive(t, frame.Height)
	require.Equal(t, site.URL+"/", frame.Url)

	to, err := live.TakeOver(ctx, &wfv1.TakeOverRequest{RunId: runID})
	require.NoError(t, err)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, to.State, "the model is mid-step")
	_, err = live.TakeOver(ctx, &wfv1.TakeOverRequest{RunId: runID})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "one takeover at a time: %v", err)
	_, err = live.SendLiveInput(ctx, &wfv1.SendLiveInputRequest{RunId: runID, TakeoverId: to.Id,
		Events: []*wfv1.LiveInput{click(30, 30)[0]}})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "no input before the run paused: %v", err)

	// The model finishes its step; the run pauses for the person.
	model.release(1)
	waitTakeover(t, ctx, watch, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE)

	secret := "hunter2x"
	var in []*wfv1.LiveInput
	in = append(in, click(100, 40)...)  // the button
	in = append(in, click(100, 135)...) // the field
	for _, r := range secret {
		k := string(r)
		in = append(in, key(wfv1.KeyInput_TYPE_DOWN, k, "Key"+strings.ToUpper(k)), key(wfv1.KeyInput_TYPE_UP, k, "Key"+strings.ToUpper(k)))
	}
	in = append(in, key(wfv1.KeyInput_TYPE_DOWN, "Enter", "Enter"), key(wfv1.KeyInput_TYPE_UP, "Enter", "Enter"))
	got, err := live.SendLiveInput(ctx, &wfv1.SendLiveInputRequest{RunId: runID, TakeoverId: to.Id, Events: in})
	require.NoError(t, err)
	require.EqualValues(t, len(in), got.Accepted)
	_, err = live.HandBack(ctx, &wfv1.HandBackRequest{RunId: runID, TakeoverId: to.Id, Note: "I pressed it and entered the passcode"})
	require.NoError(t, err)

	// The model is told what the person did and sees the page they left.
	call := model.waitCall(t, 2)
	text := callText(call)
	require.Contains(t, text, "took over the browser")
	require.Contains(t, text, "I pressed it and entered the passcode")
	require.Contains(t, text, `button "Press me"`)
	require.Regexp(t, `textbox "Passcode"[^\n]* filled`, text, "the person's keys reached the page")
	require.Contains(t, text, `typed 8 characters into textbox "Passcode"`)
	require.NotContains(t, text, secret)
	model.release(2)

	final := waitFinished(t, front.client, runID)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.Nil(t, final.Takeover, "no open takeover after the run")

	steps, err := front.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: runID})
	require.NoError(t, err)
	require.Len(t, steps.Steps, 3)
	human := steps.Steps[1]
	require.Equal(t, "human", human.Actor)
	require.NotEmpty(t, human.ScreenshotMediaId)
	var tools []string
	for _, a := range human.Actions {
		tools = append(tools, a.Tool)
	}
	require.Contains(t, tools, "human_click")
	require.Contains(t, tools, "human_type")
	raw, err := json.Marshal(steps)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret, "typed text is not recorded")

	// The takeover's life is in the run's events, ended with its step.
	var states []wfv1.TakeoverState
	for _, ev := range collectEvents(t, front.client, runID, 0) {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_TAKEOVER {
			states = append(states, ev.GetTakeover().GetState())
			if ev.GetTakeover().GetState() == wfv1.TakeoverState_TAKEOVER_STATE_ENDED {
				require.Equal(t, "handed_back", ev.GetTakeover().GetEndReason())
			}
		}
	}
	require.Equal(t, []wfv1.TakeoverState{wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED,
		wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, wfv1.TakeoverState_TAKEOVER_STATE_ENDED}, states)

	// The live view ends with the run, and a finished run has none.
	for {
		if _, err := watch.Recv(); err != nil {
			break
		}
	}
	_, err = live.TakeOver(ctx, &wfv1.TakeOverRequest{RunId: runID})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
}

func click(x, y float64) []*wfv1.LiveInput {
	mouse := func(typ wfv1.MouseInput_Type) *wfv1.LiveInput {
		return &wfv1.LiveInput{Event: &wfv1.LiveInput_Mouse{Mouse: &wfv1.MouseInput{Type: typ, X: x, Y: y,
			Button: wfv1.MouseInput_BUTTON_LEFT, ClickCount: 1}}}
	}
	return []*wfv1.LiveInput{mouse(wfv1.MouseInput_TYPE_DOWN), mouse(wfv1.MouseInput_TYPE_UP)}
}

func key(typ wfv1.KeyInput_Type, k, code string) *wfv1.LiveInput {
	return &wfv1.LiveInput{Event: &wfv1.LiveInput_Key{Key: &wfv1.KeyInput{Type: typ, Key: k, Code: code}}}
}

// waitTakeover reads frames until one shows the takeover in state.
func waitTakeover(t *testing.T, ctx context.Context, watch wfv1.LiveService_WatchLiveClient, state wfv1.TakeoverState) {
	t.Helper()
	for {
		f, err := watch.Recv()
		require.NoError(t, err, "waiting for takeover %s", state)
		if f.GetTakeover().GetState() == state {
			return
		}
		require.NoError(t, ctx.Err())
	}
}

// callText is everything a model call carried, as text.
func callText(c llmtest.Call) string {
	var b strings.Builder
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text)
			if p.ToolResult != nil {
				b.WriteString(p.ToolResult.Content)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
