package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// callHook, when set on a Pool, runs before every CDP call of its browsers;
// a non-nil error fails the call. Tests use it to make a browser misbehave
// in ways a real one only does under load (a close that never answers).
type callHook func(ctx context.Context, method string, params any) error

// contextIDKey carries a *proto.BrowserBrowserContextID into a
// Target.createBrowserContext call, so the pool learns the ID of the context
// that browser.NewSession creates.
type contextIDKey struct{}

// cdpClient is the CDP connection of one Chromium process. It sits between
// rod and the websocket to give the pool what rod does not:
//   - disconnected closes when the websocket does (the browser crashed or was
//     killed), which fails the process's leases at once;
//   - every new browser context has its downloads denied before any page of
//     it exists (Browser.setDownloadBehavior takes a browserContextId, and
//     no command-line flag reaches incognito contexts);
//   - calls that fail in transport (not a protocol error, not their context
//     ending) wrap browser.ErrBrowserGone.
type cdpClient struct {
	inner        *cdp.Client
	ws           *cdp.WebSocket
	events       chan *cdp.Event
	disconnected chan struct{}
	hook         func() callHook
	closeOnce    sync.Once
}

// dial connects to a browser's DevTools websocket.
func dial(ctx context.Context, wsURL string, hook func() callHook) (*cdpClient, error) {
	ws := &cdp.WebSocket{}
	if err := ws.Connect(ctx, wsURL, nil); err != nil {
		return nil, fmt.Errorf("connect to chromium: %w", err)
	}
	c := &cdpClient{
		inner:        cdp.New().Start(ws),
		ws:           ws,
		events:       make(chan *cdp.Event),
		disconnected: make(chan struct{}),
		hook:         hook,
	}
	go c.forward()
	return c, nil
}

// forward relays events to rod until the websocket closes. rod reads its
// event channel until it is closed, so the relay never blocks for long.
func (c *cdpClient) forward() {
	for e := range c.inner.Event() {
		c.events <- e
	}
	close(c.events)
	close(c.disconnected)
}

// Event implements rod.CDPClient.
func (c *cdpClient) Event() <-chan *cdp.Event { return c.events }

// Call implements rod.CDPClient.
func (c *cdpClient) Call(ctx context.Context, sessionID, method string, params any) ([]byte, error) {
	if h := c.hook(); h != nil {
		if err := h(ctx, method, params); err != nil {
			return nil, wrap(ctx, err)
		}
	}
	res, err := c.inner.Call(ctx, sessionID, method, params)
	if err != nil {
		return nil, wrap(ctx, err)
	}
	if method == (proto.TargetCreateBrowserContext{}).ProtoReq() {
		if err := c.denyDownloads(ctx, res); err != nil {
			return nil, wrap(ctx, err)
		}
	}
	return res, nil
}

// denyDownloads turns off downloads in the context a
// Target.createBrowserContext call just created (and disposes of the
// context when that fails, so no context ever allows them).
func (c *cdpClient) denyDownloads(ctx context.Context, created []byte) error {
	var res proto.TargetCreateBrowserContextResult
	if err := json.Unmarshal(created, &res); err != nil {
		return fmt.Errorf("read created browser context: %w", err)
	}
	_, err := c.inner.Call(ctx, "", proto.BrowserSetDownloadBehavior{}.ProtoReq(), proto.BrowserSetDownloadBehavior{
		Behavior:         proto.BrowserSetDownloadBehaviorBehaviorDeny,
		BrowserContextID: res.BrowserContextID,
		// Browser.downloadWillBegin and downloadProgress (canceled) then
		// tell whoever listens that the page tried to download.
		EventsEnabled: true,
	})
	if err != nil {
		disposeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = c.inner.Call(disposeCtx, "", proto.TargetDisposeBrowserContext{}.ProtoReq(),
			proto.TargetDisposeBrowserContext(res))
		return fmt.Errorf("deny downloads: %w", err)
	}
	if id, ok := ctx.Value(contextIDKey{}).(*proto.BrowserBrowserContextID); ok {
		*id = res.BrowserContextID
	}
	return nil
}

// wrap marks transport failures as the browser being gone: cdp.Client
// returns a *cdp.Error for what the browser answered, the context's error
// when the caller gave up, and anything else only when the websocket broke.
func wrap(ctx context.Context, err error) error {
	var protoErr *cdp.Error
	if errors.As(err, &protoErr) || ctx.Err() != nil || errors.Is(err, browser.ErrBrowserGone) {
		return err
	}
	return fmt.Errorf("%w: %w", browser.ErrBrowserGone, err)
}

// close drops the websocket; pending calls fail and disconnected closes.
func (c *cdpClient) close() {
	c.closeOnce.Do(func() { _ = c.ws.Close() })
}
