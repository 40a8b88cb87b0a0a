package browser

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

var testSnapshots atomic.Int64

// ActionRefs stores refs @e0, @e1, ... for the first element each CSS
// selector matches, with the role, name and box a snapshot would record,
// and returns the snapshot ID (tests only).
func ActionRefs(ctx context.Context, pg *Page, selectors ...string) (string, error) {
	p := pg.p.Context(ctx)
	refs := make([]NodeRef, 0, len(selectors))
	for i, sel := range selectors {
		obj, err := evalObject(ctx, pg.p, `function(s) { return document.querySelector(s); }`, sel)
		if err != nil || obj == "" {
			return "", fmt.Errorf("no element %q: %v", sel, err)
		}
		node, err := proto.DOMDescribeNode{ObjectID: obj}.Call(p)
		if err != nil {
			return "", fmt.Errorf("describe %q: %w", sel, err)
		}
		nr := NodeRef{Ref: "@e" + strconv.Itoa(i), BackendNodeID: node.Node.BackendNodeID, FrameID: proto.PageFrameID(pg.p.TargetID)}
		ax, err := proto.AccessibilityGetPartialAXTree{ObjectID: obj}.Call(p)
		if err != nil {
			return "", fmt.Errorf("accessibility node of %q: %w", sel, err)
		}
		for _, n := range ax.Nodes {
			if n.BackendDOMNodeID == node.Node.BackendNodeID {
				if n.Role != nil {
					nr.Role = n.Role.Value.Str()
				}
				if n.Name != nil {
					nr.Name = n.Name.Value.Str()
				}
			}
		}
		if q, err := (proto.DOMGetContentQuads{ObjectID: obj}).Call(p); err == nil && len(q.Quads) > 0 {
			b := q.Box()
			nr.Box = Rect{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height}
		}
		refs = append(refs, nr)
	}
	id := "test-" + strconv.FormatInt(testSnapshots.Add(1), 10)
	pg.refs.storeRefs(id, refs)
	return id, nil
}

// ActionEval evaluates the JavaScript expression expr in the page (awaiting
// promises) and returns its value (tests only).
func ActionEval(ctx context.Context, pg *Page, expr string) (gson.JSON, error) {
	r, err := proto.RuntimeEvaluate{Expression: expr, AwaitPromise: true, ReturnByValue: true, UserGesture: true}.Call(pg.p.Context(ctx))
	if err != nil {
		return gson.JSON{}, err
	}
	if r.ExceptionDetails != nil {
		return gson.JSON{}, fmt.Errorf("eval %s: %s", expr, exceptionText(r.ExceptionDetails))
	}
	return r.Result.Value, nil
}
