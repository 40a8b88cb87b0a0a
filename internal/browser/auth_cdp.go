package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// ContextConn relays the Chrome DevTools Protocol between someone else's
// automation code (a login webhook's Playwright, Puppeteer or rod) and one
// browser context, over the pool's own connection to Chromium. A Chromium
// process hosts the contexts of several runs, so everything outside the
// context is hidden or refused:
//
//   - Target.getTargets, Target.getBrowserContexts and the target events
//     (targetCreated, targetInfoChanged, targetDestroyed, attachedToTarget)
//     list only the context's targets; pages of other contexts a caller's
//     auto-attach catches are let go at once, unseen.
//   - Target.attachToTarget, closeTarget, activateTarget and getTargetInfo
//     refuse other contexts' targets; createTarget always opens its page in
//     the context; only flat sessions are served.
//   - Browser.* (but getVersion), Target.createBrowserContext,
//     disposeBrowserContext, attachToBrowserTarget, exposeDevToolsProtocol,
//     sendMessageToTarget, Page.setDownloadBehavior and any command naming
//     another browserContextId are refused, as is closing the page the
//     connection was opened for.
//
// The caller's root session is a browser-target session of the
// connection's own; commands of one session are relayed in order. Close
// detaches every session the caller made, which also undoes what they set
// (interception, emulation).
type ContextConn struct {
	b       *rod.Browser // bound to ctx
	ctxID   proto.BrowserBrowserContextID
	protect proto.TargetTargetID
	root    proto.TargetSessionID
	ctx     context.Context
	cancel  context.CancelFunc
	events  chan []byte
	loop    chan struct{}
	work    sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	sessions map[proto.TargetSessionID]proto.TargetTargetID // the caller's
	targets  map[proto.TargetTargetID]bool                  // the context's, as seen
	queues   map[proto.TargetSessionID]chan func()
}

// cdpRefusedCode is the error code of a command a ContextConn does not
// relay.
const cdpRefusedCode = -32000

// OpenContextConn opens a ContextConn to pg's browser context; pg itself
// cannot be closed through it. Close it when the caller is done.
func (pg *Page) OpenContextConn(ctx context.Context) (*ContextConn, error) {
	b := pg.p.Browser()
	cctx, cancel := context.WithCancel(b.GetContext())
	c := &ContextConn{
		b:        b.Context(cctx),
		ctxID:    b.BrowserContextID,
		protect:  pg.p.TargetID,
		ctx:      cctx,
		cancel:   cancel,
		events:   make(chan []byte, 64),
		loop:     make(chan struct{}),
		sessions: map[proto.TargetSessionID]proto.TargetTargetID{},
		targets:  map[proto.TargetTargetID]bool{pg.p.TargetID: true},
		queues:   map[proto.TargetSessionID]chan func(){},
	}
	events := c.b.Event() // subscribed before the session exists
	res, err := proto.TargetAttachToBrowserTarget{}.Call(b.Context(ctx))
	if err != nil {
		cancel()
		return nil, classify(fmt.Errorf("cdp relay: attach to browser: %w", err))
	}
	c.root = res.SessionID
	go c.run(events)
	return c, nil
}

// TargetID is the page the connection was opened for.
func (c *ContextConn) TargetID() string { return string(c.protect) }

// ContextID is the browser context the connection is confined to.
func (c *ContextConn) ContextID() string { return string(c.ctxID) }

// Events are the CDP event messages for the caller, as JSON ({"method",
// "params", "sessionId"}); closed by Close.
func (c *ContextConn) Events() <-chan []byte { return c.events }

// Send relays one CDP command message (JSON {"id", "method", "params",
// "sessionId"}) and calls reply with the answer message. Commands of one
// session are relayed in order, each after the previous one was answered;
// reply is called from another goroutine. After Close, commands are
// answered with an error.
func (c *ContextConn) Send(msg []byte, reply func([]byte)) {
	var m struct {
		ID        json.RawMessage       `json:"id"`
		Method    string                `json:"method"`
		Params    json.RawMessage       `json:"params"`
		SessionID proto.TargetSessionID `json:"sessionId"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || len(m.ID) == 0 || m.Method == "" {
		reply(replyMessage(m.ID, m.SessionID, nil, &cdp.Error{Code: -32700, Message: "not a CDP command message"}))
		return
	}
	if refusal := c.enqueue(m.SessionID, func() {
		res, err := c.call(m.SessionID, m.Method, m.Params)
		reply(replyMessage(m.ID, m.SessionID, res, err))
	}); refusal != nil {
		reply(replyMessage(m.ID, m.SessionID, nil, refusal))
	}
}

// enqueue queues job on session sid's queue, starting it if needed; it
// returns why it did not.
func (c *ContextConn) enqueue(sid proto.TargetSessionID, job func()) *cdp.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &cdp.Error{Code: cdpRefusedCode, Message: "the connection is closed"}
	}
	if sid != "" {
		if _, ok := c.sessions[sid]; !ok {
			return &cdp.Error{Code: -32001, Message: "Session with given id not found."}
		}
	}
	q, ok := c.queues[sid]
	if !ok {
		q = make(chan func(), 256)
		c.queues[sid] = q
		c.work.Add(1)
		go func() {
			defer c.work.Done()
			for {
				select {
				case f := <-q:
					f()
				case <-c.ctx.Done():
					return
				}
			}
		}()
	}
	select {
	case q <- job:
		return nil
	default:
		return &cdp.Error{Code: cdpRefusedCode, Message: "too many commands in flight"}
	}
}

// Close detaches the caller's sessions and the connection's own, and ends
// Events. It is safe to call more than once.
func (c *ContextConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sessions := make([]proto.TargetSessionID, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), cdpCallTimeout)
	defer cancel()
	rootSession := &cdpSession{b: c.b, id: c.root, ctx: ctx}
	for _, s := range sessions {
		_ = proto.TargetDetachFromTarget{SessionID: s}.Call(rootSession)
	}
	err := proto.TargetDetachFromTarget{SessionID: c.root}.Call(c.b.Context(ctx))
	if err != nil && c.ctx.Err() == nil {
		err = classify(fmt.Errorf("cdp relay: detach: %w", err))
	} else {
		err = nil
	}
	c.cancel()
	<-c.loop
	c.work.Wait()
	return err
}

// rawParams are a command's parameters as the caller sent them; emptied
// after the call, because rod keeps the last parameters of every method.
type rawParams struct{ b json.RawMessage }

func (p *rawParams) MarshalJSON() ([]byte, error) {
	if len(p.b) == 0 {
		return []byte("{}"), nil
	}
	return p.b, nil
}

// relay sends a command to Chromium on session sid (the root session for
// the caller's root).
func (c *ContextConn) relay(sid proto.TargetSessionID, method string, params json.RawMessage) (json.RawMessage, error) {
	if sid == "" {
		sid = c.root
	}
	p := &rawParams{b: params}
	defer func() { p.b = nil }()
	return c.b.Call(c.ctx, string(sid), method, p)
}

// call applies the confinement rules to one command and relays it.
func (c *ContextConn) call(sid proto.TargetSessionID, method string, raw json.RawMessage) (json.RawMessage, error) {
	var params map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &params); err != nil {
			return nil, &cdp.Error{Code: -32602, Message: "params must be an object"}
		}
	}
	if v, ok := params["browserContextId"]; ok {
		var id proto.BrowserBrowserContextID
		if json.Unmarshal(v, &id) != nil || id != c.ctxID {
			return nil, refused(method, "names another browser context")
		}
	}
	domain, _, _ := strings.Cut(method, ".")
	str := func(name string) string {
		var s string
		_ = json.Unmarshal(params[name], &s)
		return s
	}
	switch method {
	case "Browser.getVersion":
		return c.relay(sid, method, raw)
	case "Target.getBrowserContexts":
		return json.Marshal(map[string]any{"browserContextIds": []proto.BrowserBrowserContextID{c.ctxID}})
	case "Target.getTargets":
		res, err := c.relay(sid, method, raw)
		if err != nil {
			return nil, err
		}
		var list proto.TargetGetTargetsResult
		if err := json.Unmarshal(res, &list); err != nil {
			return nil, err
		}
		kept := make([]*proto.TargetTargetInfo, 0, len(list.TargetInfos))
		for _, t := range list.TargetInfos {
			if t.BrowserContextID == c.ctxID {
				c.sawTarget(t.TargetID)
				kept = append(kept, t)
			}
		}
		return json.Marshal(proto.TargetGetTargetsResult{TargetInfos: kept})
	case "Target.createTarget":
		if params == nil {
			params = map[string]json.RawMessage{}
		}
		params["browserContextId"], _ = json.Marshal(c.ctxID)
		raw, _ = json.Marshal(params)
		res, err := c.relay(sid, method, raw)
		if err == nil {
			var created proto.TargetCreateTargetResult
			if json.Unmarshal(res, &created) == nil {
				c.sawTarget(created.TargetID)
			}
		}
		return res, err
	case "Target.attachToTarget":
		var flatten bool
		_ = json.Unmarshal(params["flatten"], &flatten)
		if !flatten {
			return nil, refused(method, "only flat sessions (flatten: true) are served")
		}
		if err := c.checkTarget(method, proto.TargetTargetID(str("targetId"))); err != nil {
			return nil, err
		}
		res, err := c.relay(sid, method, raw)
		if err == nil {
			var att proto.TargetAttachToTargetResult
			if json.Unmarshal(res, &att) == nil {
				c.addSession(att.SessionID, proto.TargetTargetID(str("targetId")))
			}
		}
		return res, err
	case "Target.closeTarget":
		if proto.TargetTargetID(str("targetId")) == c.protect {
			return nil, refused(method, "the run's page cannot be closed")
		}
		fallthrough
	case "Target.activateTarget", "Target.autoAttachRelated":
		if err := c.checkTarget(method, proto.TargetTargetID(str("targetId"))); err != nil {
			return nil, err
		}
		return c.relay(sid, method, raw)
	case "Target.getTargetInfo":
		id := proto.TargetTargetID(str("targetId"))
		if id == "" && sid == "" {
			return nil, refused(method, "the browser target is not served")
		}
		if id != "" {
			if err := c.checkTarget(method, id); err != nil {
				return nil, err
			}
		}
		return c.relay(sid, method, raw)
	case "Target.detachFromTarget":
		s := proto.TargetSessionID(str("sessionId"))
		if !c.isSession(s) {
			return nil, refused(method, "name a session of this connection by sessionId")
		}
		return c.relay(sid, method, raw)
	case "Target.setAutoAttach":
		var auto, flatten bool
		_ = json.Unmarshal(params["autoAttach"], &auto)
		_ = json.Unmarshal(params["flatten"], &flatten)
		if auto && !flatten {
			return nil, refused(method, "only flat sessions (flatten: true) are served")
		}
		return c.relay(sid, method, raw)
	case "Target.setDiscoverTargets":
		return c.relay(sid, method, raw)
	case "Page.setDownloadBehavior":
		return nil, refused(method, "downloads stay denied")
	case "Page.close":
		if c.sessionTarget(sid) == c.protect {
			return nil, refused(method, "the run's page cannot be closed")
		}
	}
	switch {
	case domain == "Browser" || domain == "Target" || domain == "SystemInfo" || domain == "Tethering":
		return nil, refused(method, "not available to a login callback")
	case sid == "":
		return nil, refused(method, "send page commands on a page session (Target.attachToTarget)")
	}
	return c.relay(sid, method, raw)
}

// checkTarget refuses a target outside the context.
func (c *ContextConn) checkTarget(method string, id proto.TargetTargetID) error {
	if id == "" {
		return refused(method, "targetId is required")
	}
	c.mu.Lock()
	known := c.targets[id]
	c.mu.Unlock()
	if known {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, cdpCallTimeout)
	defer cancel()
	info, err := proto.TargetGetTargetInfo{TargetID: id}.Call(&cdpSession{b: c.b, id: c.root, ctx: ctx})
	if err != nil || info.TargetInfo == nil || info.TargetInfo.BrowserContextID != c.ctxID {
		// The same answer whether it exists elsewhere or not at all.
		return &cdp.Error{Code: cdpRefusedCode, Message: "No target with given id found"}
	}
	c.sawTarget(id)
	return nil
}

func (c *ContextConn) sawTarget(id proto.TargetTargetID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.targets[id] = true
}

func (c *ContextConn) addSession(s proto.TargetSessionID, t proto.TargetTargetID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions[s] = t
	c.targets[t] = true
}

func (c *ContextConn) isSession(s proto.TargetSessionID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.sessions[s]
	return ok
}

func (c *ContextConn) sessionTarget(s proto.TargetSessionID) proto.TargetTargetID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[s]
}

func refused(method, why string) error {
	return &cdp.Error{Code: cdpRefusedCode, Message: fmt.Sprintf("%s refused by Wayfinder: %s", method, why)}
}

// replyMessage is the answer message to command id.
func replyMessage(id json.RawMessage, sid proto.TargetSessionID, result json.RawMessage, err error) []byte {
	m := struct {
		ID        json.RawMessage       `json:"id"`
		Result    json.RawMessage       `json:"result,omitempty"`
		Error     *cdp.Error            `json:"error,omitempty"`
		SessionID proto.TargetSessionID `json:"sessionId,omitempty"`
	}{ID: id, SessionID: sid}
	if len(m.ID) == 0 {
		m.ID = json.RawMessage("0")
	}
	if err != nil {
		var ce *cdp.Error
		if !errors.As(err, &ce) {
			ce = &cdp.Error{Code: cdpRefusedCode, Message: err.Error()}
		}
		m.Error = ce
	} else {
		m.Result = result
		if len(m.Result) == 0 {
			m.Result = json.RawMessage("{}")
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// run forwards the events of the caller's sessions until Close.
func (c *ContextConn) run(events <-chan *rod.Message) {
	defer close(c.loop)
	defer close(c.events)
	for msg := range events {
		root := msg.SessionID == c.root
		if !root && !c.isSession(msg.SessionID) {
			continue
		}
		if !c.keep(msg) {
			continue
		}
		params, ok := eventParams(msg)
		if !ok {
			continue
		}
		out := struct {
			Method    string                `json:"method"`
			Params    json.RawMessage       `json:"params"`
			SessionID proto.TargetSessionID `json:"sessionId,omitempty"`
		}{Method: msg.Method, Params: params}
		if !root {
			out.SessionID = msg.SessionID
		}
		data, err := json.Marshal(out)
		if err != nil {
			continue
		}
		select {
		case c.events <- data:
		case <-c.ctx.Done():
			return
		}
	}
}

// keep decides whether the caller sees a target event, and tracks the
// sessions and targets it announces.
func (c *ContextConn) keep(msg *rod.Message) bool {
	switch msg.Method {
	case "Target.attachedToTarget":
		var e proto.TargetAttachedToTarget
		if !msg.Load(&e) || e.TargetInfo == nil {
			return false
		}
		if e.TargetInfo.BrowserContextID != c.ctxID {
			parent := msg.SessionID
			c.work.Add(1)
			go func() {
				defer c.work.Done()
				c.release(parent, e.SessionID, e.WaitingForDebugger)
			}()
			return false
		}
		c.addSession(e.SessionID, e.TargetInfo.TargetID)
		return true
	case "Target.detachedFromTarget":
		var e proto.TargetDetachedFromTarget
		if !msg.Load(&e) {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ours := c.sessions[e.SessionID]
		delete(c.sessions, e.SessionID)
		return ours
	case "Target.targetCreated", "Target.targetInfoChanged":
		var info *proto.TargetTargetInfo
		if msg.Method == "Target.targetCreated" {
			var e proto.TargetTargetCreated
			if msg.Load(&e) {
				info = e.TargetInfo
			}
		} else {
			var e proto.TargetTargetInfoChanged
			if msg.Load(&e) {
				info = e.TargetInfo
			}
		}
		if info == nil || info.BrowserContextID != c.ctxID {
			return false
		}
		c.sawTarget(info.TargetID)
		return true
	case "Target.targetDestroyed", "Target.targetCrashed":
		var id proto.TargetTargetID
		if msg.Method == "Target.targetDestroyed" {
			var e proto.TargetTargetDestroyed
			if msg.Load(&e) {
				id = e.TargetID
			}
		} else {
			var e proto.TargetTargetCrashed
			if msg.Load(&e) {
				id = e.TargetID
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.targets[id]
	case "Target.receivedMessageFromTarget":
		return false
	}
	// The root session only ever gets Target events.
	return msg.SessionID != c.root
}

// release lets a target of another context that the caller's auto-attach
// caught run, and detaches from it.
func (c *ContextConn) release(parent, child proto.TargetSessionID, waiting bool) {
	ctx, cancel := context.WithTimeout(c.ctx, cdpCallTimeout)
	defer cancel()
	if waiting {
		_ = proto.RuntimeRunIfWaitingForDebugger{}.Call(&cdpSession{b: c.b, id: child, ctx: ctx})
	}
	_ = proto.TargetDetachFromTarget{SessionID: child}.Call(&cdpSession{b: c.b, id: parent, ctx: ctx})
}

// rawEvent loads an event rod has no type for, as it came.
type rawEvent struct {
	method string
	data   json.RawMessage
}

func (r *rawEvent) ProtoEvent() string { return r.method }

func (r *rawEvent) UnmarshalJSON(b []byte) error {
	r.data = append(json.RawMessage(nil), b...)
	return nil
}

// eventParams returns an event's parameters as JSON. rod shares one message
// between its subscribers and keeps the first decoding, so an event of a
// known type is decoded into that type (as anyone else would) and encoded
// again.
func eventParams(msg *rod.Message) (json.RawMessage, bool) {
	if t := proto.GetType(msg.Method); t != nil {
		ev, ok := reflect.New(t).Interface().(proto.Event)
		if !ok || !msg.Load(ev) {
			return nil, false
		}
		b, err := json.Marshal(ev)
		return b, err == nil
	}
	r := &rawEvent{method: msg.Method}
	if !msg.Load(r) {
		return nil, false
	}
	if len(r.data) == 0 {
		return json.RawMessage("{}"), true
	}
	return r.data, true
}
