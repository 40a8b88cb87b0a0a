package browser

import (
	"context"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// doPointer clicks, double-clicks, right-clicks or hovers.
func (pg *Page) doPointer(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	el, err := pg.locate(ctx, a.Ref, a.SnapshotID, a.Target, opts, out.res)
	if err != nil {
		return err
	}
	pt, err := pg.actionPoint(ctx, el, a.Kind != ActionHover)
	if err != nil {
		return err
	}
	out.acted = true
	switch a.Kind {
	case ActionHover:
		return pg.mouseMove(ctx, pt, 0)
	case ActionRightClick:
		return pg.click(ctx, pt, proto.InputMouseButtonRight, 1)
	case ActionDoubleClick:
		return pg.click(ctx, pt, proto.InputMouseButtonLeft, 2)
	default:
		return pg.click(ctx, pt, proto.InputMouseButtonLeft, 1)
	}
}

// buttonBit is the "buttons" bit of a pressed mouse button.
func buttonBit(b proto.InputMouseButton) int {
	switch b {
	case proto.InputMouseButtonLeft:
		return 1
	case proto.InputMouseButtonRight:
		return 2
	case proto.InputMouseButtonMiddle:
		return 4
	}
	return 0
}

// mouseMove moves the mouse to pt with the given buttons held.
func (pg *Page) mouseMove(ctx context.Context, pt proto.Point, buttons int) error {
	b := proto.InputMouseButtonNone
	if buttons&1 != 0 {
		b = proto.InputMouseButtonLeft
	}
	return pg.mouseEvent(ctx, proto.InputDispatchMouseEventTypeMouseMoved, pt, b, buttons, 0)
}

func (pg *Page) mouseEvent(ctx context.Context, typ proto.InputDispatchMouseEventType, pt proto.Point, b proto.InputMouseButton, buttons, clicks int) error {
	err := proto.InputDispatchMouseEvent{
		Type: typ, X: pt.X, Y: pt.Y, Button: b, Buttons: gson.Int(buttons), ClickCount: clicks,
	}.Call(pg.p.Context(ctx))
	if err != nil {
		return classify(fmt.Errorf("mouse %s at (%.0f, %.0f): %w", typ, pt.X, pt.Y, err))
	}
	return nil
}

// click moves to pt and clicks count times (2: a double click, which
// browsers see as a click with detail 1 then one with detail 2).
func (pg *Page) click(ctx context.Context, pt proto.Point, b proto.InputMouseButton, count int) error {
	if err := pg.mouseMove(ctx, pt, 0); err != nil {
		return err
	}
	for i := 1; i <= count; i++ {
		if err := pg.mouseEvent(ctx, proto.InputDispatchMouseEventTypeMousePressed, pt, b, buttonBit(b), i); err != nil {
			return err
		}
		if err := pg.mouseEvent(ctx, proto.InputDispatchMouseEventTypeMouseReleased, pt, b, 0, i); err != nil {
			return err
		}
	}
	return nil
}

// dragSteps is how many mouse moves carry a pointer-driven drag, so
// libraries that track movement see it.
const dragSteps = 8

// jsDragProbe listens (once) for the HTML5 dragstart a mouse drag may
// start in the element's document; probe.started() tells whether one did.
var jsDragProbe = jsFn(`function() {
  const w = this.ownerDocument.defaultView;
  let ev = null;
  const l = e => { ev = e; };
  w.addEventListener('dragstart', l, {once: true, capture: true});
  return {started: () => { w.removeEventListener('dragstart', l, {capture: true}); return !!ev && !ev.defaultPrevented; }};
}`)

// doDrag drags from the source to the destination. Pages using HTML5 drag
// and drop get real drag events (the drag is intercepted and replayed as
// dragenter/dragover/drop at the destination); others get the mouse moves
// their pointer handlers expect.
func (pg *Page) doDrag(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	src, err := pg.locate(ctx, a.Ref, a.SnapshotID, a.Target, opts, out.res)
	if err != nil {
		return err
	}
	from, err := pg.actionPoint(ctx, src, true)
	if err != nil {
		return err
	}
	var dstRes ActionResult
	dst, err := pg.locate(ctx, a.ToRef, "", a.ToTarget, opts, &dstRes)
	if err != nil {
		return err
	}
	to, err := pg.dropPoint(ctx, dst)
	if err != nil {
		return err
	}
	out.res.Element = fmt.Sprintf("%s → %s", out.res.Element, dstRes.Element)
	if out.res.Note == "" {
		out.res.Note = dstRes.Note
	}

	sess := pg.p.Context(ctx)
	if err := (proto.InputSetInterceptDrags{Enabled: true}).Call(sess); err != nil {
		return classify(fmt.Errorf("intercept drags: %w", err))
	}
	defer func() {
		_ = proto.InputSetInterceptDrags{Enabled: false}.Call(pg.p.Context(context.WithoutCancel(ctx)))
	}()
	dragData := make(chan *proto.InputDragData, 1)
	pg.tab.mu.Lock()
	pg.tab.drag = dragData
	pg.tab.mu.Unlock()
	defer func() {
		pg.tab.mu.Lock()
		pg.tab.drag = nil
		pg.tab.mu.Unlock()
	}()

	var probeObj proto.RuntimeRemoteObjectID
	if src.obj != "" {
		r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: jsDragProbe, ObjectID: src.obj}.Call(src.sess.Context(ctx))
		if err == nil && r.ExceptionDetails == nil {
			probeObj = r.Result.ObjectID
			defer release(ctx, src.sess, probeObj)
		}
	}

	out.acted = true
	if err := pg.mouseMove(ctx, from, 0); err != nil {
		return err
	}
	if err := pg.mouseEvent(ctx, proto.InputDispatchMouseEventTypeMousePressed, from, proto.InputMouseButtonLeft, 1, 1); err != nil {
		return err
	}
	step := func(i int) proto.Point {
		f := float64(i) / dragSteps
		return proto.Point{X: from.X + (to.X-from.X)*f, Y: from.Y + (to.Y-from.Y)*f}
	}
	if err := pg.mouseMove(ctx, step(1), 1); err != nil {
		return err
	}
	started := false
	if probeObj != "" {
		_ = callOn(ctx, src.sess, probeObj, `function() { return this.started(); }`, &started)
	}
	if started {
		var data *proto.InputDragData
		select {
		case data = <-dragData:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, typ := range []proto.InputDispatchDragEventType{
			proto.InputDispatchDragEventTypeDragEnter, proto.InputDispatchDragEventTypeDragOver, proto.InputDispatchDragEventTypeDrop,
		} {
			if err := (proto.InputDispatchDragEvent{Type: typ, X: to.X, Y: to.Y, Data: data}).Call(sess); err != nil {
				return classify(fmt.Errorf("drag event %s: %w", typ, err))
			}
		}
		return nil
	}
	for i := 2; i <= dragSteps; i++ {
		if err := pg.mouseMove(ctx, step(i), 1); err != nil {
			return err
		}
	}
	return pg.mouseEvent(ctx, proto.InputDispatchMouseEventTypeMouseReleased, to, proto.InputMouseButtonLeft, 0, 1)
}

// dropPoint returns where to drop on el: its visible centre, without
// scrolling (which could move the source out of view).
func (pg *Page) dropPoint(ctx context.Context, el *element) (proto.Point, error) {
	if el.point != nil {
		return *el.point, nil
	}
	st, err := el.state(ctx)
	if err != nil {
		return proto.Point{}, err
	}
	if err := el.checkVisible(st); err != nil {
		return proto.Point{}, err
	}
	return pg.visiblePoint(ctx, el)
}
