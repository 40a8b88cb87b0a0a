package governance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// ReadLocalStorage reads the localStorage of origins ("scheme://host[:port]")
// from page's browser context, for saving a persistent profile. Each origin
// is loaded in a scratch tab whose document the browser itself serves
// (Fetch interception), so nothing reaches the network and no site script
// runs; origins with empty storage are left out. It speaks CDP through the
// context-confined relay (browser.Page.OpenContextConn).
func ReadLocalStorage(ctx context.Context, page *browser.Page, origins []string) ([]OriginStorage, error) {
	var todo []string
	seen := map[string]bool{}
	for _, o := range origins {
		o = strings.TrimSuffix(o, "/")
		if validOrigin(o) != nil || seen[o] || len(todo) == MaxStateOrigins {
			continue
		}
		seen[o] = true
		todo = append(todo, o)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	conn, err := page.OpenContextConn(ctx)
	if err != nil {
		return nil, fmt.Errorf("read localStorage: %w", err)
	}
	rc := newRelay(conn)
	defer rc.close()

	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := rc.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return nil, fmt.Errorf("read localStorage: open a scratch tab: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = rc.call(cctx, "", "Target.closeTarget", map[string]any{"targetId": created.TargetID}, nil)
	}()
	// Two sessions to the tab: one answers the requests the other's
	// navigation makes (the relay runs one session's commands in order).
	var fetchSess, pageSess struct {
		SessionID string `json:"sessionId"`
	}
	for _, s := range []*struct {
		SessionID string `json:"sessionId"`
	}{&fetchSess, &pageSess} {
		if err := rc.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, s); err != nil {
			return nil, fmt.Errorf("read localStorage: attach: %w", err)
		}
	}
	var want atomic.Value // the URL to serve
	want.Store("")
	rc.onPaused(fetchSess.SessionID, func(requestID, url string) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if url == want.Load().(string) {
			_ = rc.call(cctx, fetchSess.SessionID, "Fetch.fulfillRequest", map[string]any{
				"requestId": requestID, "responseCode": 200,
				"responseHeaders": []map[string]string{{"name": "Content-Type", "value": "text/html"}},
				"body":            base64.StdEncoding.EncodeToString([]byte(`<!doctype html><link rel="icon" href="data:,"><title>wayfinder</title>`)),
			}, nil)
			return
		}
		_ = rc.call(cctx, fetchSess.SessionID, "Fetch.failRequest", map[string]any{"requestId": requestID, "errorReason": "BlockedByClient"}, nil)
	})
	if err := rc.call(ctx, fetchSess.SessionID, "Fetch.enable", map[string]any{"patterns": []map[string]string{{"urlPattern": "*"}}}, nil); err != nil {
		return nil, fmt.Errorf("read localStorage: %w", err)
	}
	var out []OriginStorage
	var errs []error
	for _, o := range todo {
		items, err := rc.originStorage(ctx, pageSess.SessionID, o, &want)
		if err != nil {
			if ctx.Err() != nil {
				return out, context.Cause(ctx)
			}
			errs = append(errs, err)
			continue
		}
		if len(items) > 0 {
			out = append(out, OriginStorage{Origin: o, Items: items})
		}
	}
	return out, errors.Join(errs...)
}

// originStorage loads origin in the scratch tab of session sid and reads
// its localStorage.
func (rc *relay) originStorage(ctx context.Context, sid, origin string, want *atomic.Value) (map[string]string, error) {
	target := origin + "/"
	want.Store(target)
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := rc.call(ctx, sid, "Page.navigate", map[string]any{"url": target}, &nav); err != nil {
		return nil, fmt.Errorf("localStorage of %s: %w", origin, err)
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("localStorage of %s: load: %s", origin, nav.ErrorText)
	}
	originJSON, _ := json.Marshal(origin)
	expr := `location.origin === ` + string(originJSON) + ` ? JSON.stringify(Object.assign({}, localStorage)) : null`
	// The navigation has committed; its document may take a moment to
	// become the one scripts run in.
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		var res struct {
			Result struct {
				Value *string `json:"value"`
			} `json:"result"`
			ExceptionDetails *struct {
				Text string `json:"text"`
			} `json:"exceptionDetails"`
		}
		if err := rc.call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
			return nil, fmt.Errorf("localStorage of %s: %w", origin, err)
		}
		if res.ExceptionDetails != nil {
			return nil, fmt.Errorf("localStorage of %s: %s", origin, res.ExceptionDetails.Text)
		}
		if res.Result.Value != nil {
			items := map[string]string{}
			if err := json.Unmarshal([]byte(*res.Result.Value), &items); err != nil {
				return nil, fmt.Errorf("localStorage of %s: %w", origin, err)
			}
			return items, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(pause):
		}
	}
}

// relay is a minimal CDP client over a browser.ContextConn.
type relay struct {
	conn *browser.ContextConn
	next atomic.Int64
	done chan struct{} // closed when the events are drained

	mu     sync.Mutex
	paused map[string]func(requestID, url string) // by session
}

func newRelay(conn *browser.ContextConn) *relay {
	rc := &relay{conn: conn, done: make(chan struct{}), paused: map[string]func(string, string){}}
	go rc.events()
	return rc
}

// close closes the connection and waits for its events to end.
func (rc *relay) close() {
	_ = rc.conn.Close()
	<-rc.done
}

func (rc *relay) onPaused(sid string, f func(requestID, url string)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.paused[sid] = f
}

// events drains the connection's events, answering paused requests.
func (rc *relay) events() {
	defer close(rc.done)
	for raw := range rc.conn.Events() {
		var ev struct {
			Method    string `json:"method"`
			SessionID string `json:"sessionId"`
			Params    struct {
				RequestID string `json:"requestId"`
				Request   struct {
					URL string `json:"url"`
				} `json:"request"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &ev) != nil || ev.Method != "Fetch.requestPaused" {
			continue
		}
		rc.mu.Lock()
		f := rc.paused[ev.SessionID]
		rc.mu.Unlock()
		if f != nil {
			f(ev.Params.RequestID, ev.Params.Request.URL)
		}
	}
}

// call sends one command on session sid ("" for the root) and decodes its
// result into out (when not nil).
func (rc *relay) call(ctx context.Context, sid, method string, params, out any) error {
	msg, err := json.Marshal(struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{rc.next.Add(1), method, params, sid})
	if err != nil {
		return err
	}
	answer := make(chan []byte, 1)
	rc.conn.Send(msg, func(b []byte) { answer <- b })
	var b []byte
	select {
	case b = <-answer:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	var reply struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("%s: %s (%d)", method, reply.Error.Message, reply.Error.Code)
	}
	if out != nil && len(reply.Result) > 0 {
		if err := json.Unmarshal(reply.Result, out); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
	return nil
}
