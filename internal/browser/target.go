package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// Target finds an element without a ref. The strategies it sets are tried
// in order — CSS, then Role (and Name), then Text, then Point — each
// waiting up to Timeout for a match before the next is tried; a match
// present at once wins without waiting. The result names the strategy that
// worked.
type Target struct {
	// CSS selector; open shadow roots are searched too.
	CSS string `json:"css,omitempty"`
	// Role (ARIA, e.g. "button") and accessible Name ("Save"; exact, else
	// case-insensitive substring). Name alone matches any role.
	Role string `json:"role,omitempty"`
	Name string `json:"name,omitempty"`
	// Text visible in the element (case-insensitive substring; a whole
	// match wins).
	Text string `json:"text,omitempty"`
	// Point in viewport CSS pixels, the last resort.
	Point *Point `json:"point,omitempty"`
	// Timeout per strategy. Default: ActionOptions.StrategyTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Point is a position in viewport CSS pixels.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

func (t *Target) validate() error {
	if t.CSS == "" && t.Role == "" && t.Name == "" && t.Text == "" && t.Point == nil {
		return fail(CodeInvalidParams, "a target needs at least one of css, role/name, text, point")
	}
	if t.Timeout < 0 {
		return fail(CodeInvalidParams, "target timeout must not be negative")
	}
	if t.Point != nil && (t.Point.X < 0 || t.Point.Y < 0) {
		return fail(CodeInvalidParams, "point (%g, %g) is outside the viewport", t.Point.X, t.Point.Y)
	}
	return nil
}

// element is a DOM element an action works on.
type element struct {
	// sess is the CDP session the element lives in.
	sess *rod.Page
	obj  proto.RuntimeRemoteObjectID
	desc string
	// point is set for coordinate targets: act exactly there.
	point *proto.Point
}

// locate finds the element of an action (ref or target) and records how in
// res.
func (pg *Page) locate(ctx context.Context, ref, snapshotID string, t *Target, opts ActionOptions, res *ActionResult) (*element, error) {
	var el *element
	var err error
	if ref != "" {
		el, err = pg.resolveRef(ctx, snapshotID, ref, res)
		if err == nil {
			res.Strategy = StrategyRef
		}
	} else {
		el, err = pg.resolveTarget(ctx, t, opts.StrategyTimeout, res)
	}
	if err != nil {
		return nil, err
	}
	if el.desc == "" {
		_ = el.call(ctx, jsDescribe, &el.desc)
	}
	res.Element = el.desc
	return el, nil
}

// resolveRef returns the element of a snapshot ref. When the page replaced
// that node, an equivalent one (same role and name, nearest the old box)
// stands in for it, and res.Note says so.
func (pg *Page) resolveRef(ctx context.Context, snapshotID, ref string, res *ActionResult) (*element, error) {
	nr, err := pg.refs.lookupRef(snapshotID, ref)
	if err != nil {
		return nil, fail(CodeRefInvalid, "%s", strings.TrimPrefix(err.Error(), "ref_invalid: "))
	}
	sess := pg.p
	r, err := proto.DOMResolveNode{BackendNodeID: nr.BackendNodeID}.Call(sess.Context(ctx))
	if err == nil {
		el := &element{sess: sess, obj: r.Object.ObjectID}
		var connected bool
		if err := el.call(ctx, `function() { return this.isConnected; }`, &connected); err != nil {
			return nil, err
		}
		if connected {
			return el, nil
		}
	} else if ctx.Err() != nil {
		return nil, err
	}
	el, err := pg.equivalent(ctx, nr)
	if err != nil {
		return nil, err
	}
	if el == nil {
		what := nr.Role
		if nr.Name != "" {
			what += fmt.Sprintf(" %q", nr.Name)
		}
		return nil, fail(CodeRefInvalid, "%s (%s) is no longer in the page and nothing equivalent replaced it; take a new snapshot", ref, what)
	}
	res.Note = fmt.Sprintf("the page replaced the element of %s; acted on the equivalent %s %q nearest its old place", ref, nr.Role, nr.Name)
	return el, nil
}

// equivalent finds the node with the role and name of nr nearest nr's old
// box, or nil.
func (pg *Page) equivalent(ctx context.Context, nr NodeRef) (*element, error) {
	if nr.Name == "" || nr.Role == "" {
		return nil, nil
	}
	cands, err := pg.queryRole(ctx, nr.Role, nr.Name, true)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	oldX, oldY := nr.Box.X+nr.Box.Width/2, nr.Box.Y+nr.Box.Height/2
	var best *element
	bestD := math.Inf(1)
	for _, c := range cands {
		q, err := proto.DOMGetContentQuads{ObjectID: c.obj}.Call(c.sess.Context(ctx))
		if err != nil || len(q.Quads) == 0 {
			continue
		}
		ctr := q.Quads[0].Center()
		if d := math.Hypot(ctr.X-oldX, ctr.Y-oldY); d < bestD {
			best, bestD = c, d
		}
	}
	return best, nil
}

// resolveTargetOnce tries the target's strategies once each, without
// waiting; nil when none matches.
func (pg *Page) resolveTargetOnce(ctx context.Context, t *Target, res *ActionResult) (*element, error) {
	return pg.resolveTarget(ctx, t, 0, res)
}

// resolveTarget tries the target's strategies: first each once, at once,
// so a present element is found without waiting; then (when per > 0) each
// in turn, waiting up to its timeout (Target.Timeout, else per);
// coordinates last.
func (pg *Page) resolveTarget(ctx context.Context, t *Target, per time.Duration, res *ActionResult) (*element, error) {
	type strategy struct {
		name Strategy
		find func(context.Context) (*element, error)
	}
	var ss []strategy
	if t.CSS != "" {
		ss = append(ss, strategy{StrategyCSS, func(ctx context.Context) (*element, error) { return pg.findCSS(ctx, t.CSS) }})
	}
	if t.Role != "" || t.Name != "" {
		ss = append(ss, strategy{StrategyRole, func(ctx context.Context) (*element, error) { return pg.findRole(ctx, t.Role, t.Name) }})
	}
	if t.Text != "" {
		ss = append(ss, strategy{StrategyText, func(ctx context.Context) (*element, error) { return pg.findText(ctx, t.Text) }})
	}
	wait := per > 0
	if t.Timeout > 0 {
		per = t.Timeout
	}
	var tried []Attempt
	for _, s := range ss {
		el, err := findOnce(ctx, per, s.find)
		if el != nil {
			res.Strategy, res.Attempts = s.name, tried
			return el, nil
		}
		if isInvalidParams(err) || ctx.Err() != nil {
			return nil, err
		}
		tried = append(tried, Attempt{Strategy: s.name, Error: errString(err, "no match")})
	}
	if !wait {
		if t.Point != nil {
			res.Strategy = StrategyCoordinates
			return pg.findPoint(ctx, *t.Point)
		}
		return nil, nil
	}
	tried = tried[:0]
	for _, s := range ss {
		el, err := pollFind(ctx, per, s.find)
		if el != nil {
			res.Strategy, res.Attempts = s.name, tried
			return el, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		tried = append(tried, Attempt{Strategy: s.name, Error: errString(err, "no match within "+per.String())})
	}
	if t.Point != nil {
		el, err := pg.findPoint(ctx, *t.Point)
		if err != nil {
			return nil, err
		}
		res.Strategy, res.Attempts = StrategyCoordinates, tried
		return el, nil
	}
	res.Attempts = tried
	msgs := make([]string, len(tried))
	for i, a := range tried {
		msgs[i] = string(a.Strategy) + ": " + a.Error
	}
	return nil, fail(CodeActionFailed, "no element matched the target (%s)", strings.Join(msgs, "; "))
}

func errString(err error, def string) string {
	if err == nil {
		return def
	}
	return err.Error()
}

func isInvalidParams(err error) bool {
	var ae *ActionError
	return errors.As(err, &ae) && ae.Code == CodeInvalidParams
}

// findOnce calls find once, within per when per > 0, so a strategy that
// hangs cannot hold the next ones up.
func findOnce(ctx context.Context, per time.Duration, find func(context.Context) (*element, error)) (*element, error) {
	if per <= 0 {
		return find(ctx)
	}
	fctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	el, err := find(fctx)
	if err != nil && fctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("no answer within %s", per)
	}
	return el, err
}

// pollFind calls find until it returns an element, fails for good, or per
// passes; the pauses grow from 25 ms to 250 ms.
func pollFind(ctx context.Context, per time.Duration, find func(context.Context) (*element, error)) (*element, error) {
	wctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	pause := 25 * time.Millisecond
	var last error
	for {
		el, err := find(wctx)
		if el != nil || isInvalidParams(err) {
			return el, err
		}
		if err != nil && wctx.Err() == nil {
			last = err
		}
		t := time.NewTimer(pause)
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, last
		case <-t.C:
		}
		pause = min(pause*2, 250*time.Millisecond)
	}
}

// findCSS returns the element a CSS selector matches (visible first).
func (pg *Page) findCSS(ctx context.Context, sel string) (*element, error) {
	obj, err := evalObject(ctx, pg.p, jsFindCSS, sel)
	if err != nil {
		if strings.Contains(err.Error(), "SyntaxError") || strings.Contains(err.Error(), "is not a valid selector") {
			return nil, fail(CodeInvalidParams, "invalid CSS selector %q", sel)
		}
		return nil, err
	}
	if obj == "" {
		return nil, nil
	}
	return &element{sess: pg.p, obj: obj}, nil
}

// findText returns the element whose visible text matches.
func (pg *Page) findText(ctx context.Context, text string) (*element, error) {
	obj, err := evalObject(ctx, pg.p, jsFindText, text)
	if err != nil || obj == "" {
		return nil, err
	}
	return &element{sess: pg.p, obj: obj}, nil
}

// findRole returns the first visible element with the role and name.
func (pg *Page) findRole(ctx context.Context, role, name string) (*element, error) {
	cands, err := pg.queryRole(ctx, role, name, false)
	if err != nil {
		return nil, err
	}
	// A name alone also matches labels and text; a visible control with
	// that name wins over them.
	var hidden, passive *element
	for _, c := range cands {
		var vis [2]bool
		if err := c.call(ctx, jsFn(`function() {
			const el = this.nodeType === 1 ? this : this.parentElement;
			return [visible(el), this.nodeType === 1 && this.matches('input,select,textarea,button,a[href],[role],[tabindex],[contenteditable]')];
		}`), &vis); err != nil {
			continue
		}
		switch {
		case vis[0] && (vis[1] || role != ""):
			return c, nil
		case vis[0] && passive == nil:
			passive = c
		case hidden == nil:
			hidden = c
		}
	}
	if passive != nil {
		return passive, nil
	}
	return hidden, nil
}

// queryRole finds elements by computed ARIA role and accessible name
// through the accessibility tree: exact name first, then (unless exact)
// a case-insensitive substring of the name.
func (pg *Page) queryRole(ctx context.Context, role, name string, exact bool) ([]*element, error) {
	p := pg.p.Context(ctx)
	doc, err := evalObject(ctx, pg.p, `function() { return document; }`)
	if err != nil {
		return nil, err
	}
	defer release(ctx, pg.p, doc)
	q := proto.AccessibilityQueryAXTree{ObjectID: doc, Role: role, AccessibleName: name}
	r, err := q.Call(p)
	if err != nil {
		return nil, fmt.Errorf("query accessibility tree: %w", err)
	}
	nodes := r.Nodes
	if len(nodes) == 0 && !exact && name != "" {
		q.AccessibleName = ""
		if role == "" {
			return nil, nil // a name-only query would match every node
		}
		if r, err = q.Call(p); err != nil {
			return nil, fmt.Errorf("query accessibility tree: %w", err)
		}
		want := strings.ToLower(strings.Join(strings.Fields(name), " "))
		for _, n := range r.Nodes {
			if n.Name != nil && strings.Contains(strings.ToLower(strings.Join(strings.Fields(n.Name.Value.Str()), " ")), want) {
				nodes = append(nodes, n)
			}
		}
	}
	var out []*element
	for _, n := range nodes {
		if n.Ignored || n.BackendDOMNodeID == 0 {
			continue
		}
		rn, err := proto.DOMResolveNode{BackendNodeID: n.BackendDOMNodeID}.Call(p)
		if err != nil {
			continue
		}
		out = append(out, &element{sess: pg.p, obj: rn.Object.ObjectID})
	}
	return out, nil
}

// findPoint returns the element at a viewport point, to act at that point.
func (pg *Page) findPoint(ctx context.Context, pt Point) (*element, error) {
	vw, vh, err := pg.viewport(ctx)
	if err != nil {
		return nil, err
	}
	if pt.X >= vw || pt.Y >= vh {
		return nil, fail(CodeInvalidParams, "point (%g, %g) is outside the viewport (%gx%g)", pt.X, pt.Y, vw, vh)
	}
	el := &element{sess: pg.p, point: &proto.Point{X: pt.X, Y: pt.Y}}
	m, err := proto.PageGetLayoutMetrics{}.Call(pg.p.Context(ctx))
	if err != nil {
		return nil, classify(fmt.Errorf("layout metrics: %w", err))
	}
	// DOM.getNodeForLocation takes document coordinates.
	x, y := pt.X+float64(m.CSSLayoutViewport.PageX), pt.Y+float64(m.CSSLayoutViewport.PageY)
	hit, err := proto.DOMGetNodeForLocation{X: int(x), Y: int(y), IgnorePointerEventsNone: true}.Call(pg.p.Context(ctx))
	if err == nil {
		if rn, err := (proto.DOMResolveNode{BackendNodeID: hit.BackendNodeID}).Call(pg.p.Context(ctx)); err == nil {
			el.obj = rn.Object.ObjectID
		}
	}
	if el.obj == "" {
		el.desc = fmt.Sprintf("the point (%g, %g)", pt.X, pt.Y)
	}
	return el, nil
}

// viewport returns the layout viewport's size in CSS pixels.
func (pg *Page) viewport(ctx context.Context) (w, h float64, err error) {
	m, err := proto.PageGetLayoutMetrics{}.Call(pg.p.Context(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("layout metrics: %w", err)
	}
	return float64(m.CSSLayoutViewport.ClientWidth), float64(m.CSSLayoutViewport.ClientHeight), nil
}

// call runs a jsFn snippet on the element and decodes its result into out
// (when not nil). Arguments that are elements pass as references.
func (el *element) call(ctx context.Context, fn string, out any, args ...any) error {
	if el.obj == "" {
		return fail(CodeActionFailed, "no element at %s", el.desc)
	}
	return callOn(ctx, el.sess, el.obj, fn, out, args...)
}

// callOn runs fn on the remote object obj.
func callOn(ctx context.Context, sess *rod.Page, obj proto.RuntimeRemoteObjectID, fn string, out any, args ...any) error {
	r, err := proto.RuntimeCallFunctionOn{
		FunctionDeclaration: fn, ObjectID: obj, Arguments: callArgs(args),
		ReturnByValue: true, AwaitPromise: true,
	}.Call(sess.Context(ctx))
	if err != nil {
		return classify(err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("page script failed: %s", exceptionText(r.ExceptionDetails))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(r.Result.Value.JSON("", "")), out)
}

// callArgs encodes call arguments; elements and remote objects pass as
// references.
func callArgs(args []any) []*proto.RuntimeCallArgument {
	cargs := make([]*proto.RuntimeCallArgument, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case *element:
			cargs[i] = &proto.RuntimeCallArgument{ObjectID: v.obj}
		case proto.RuntimeRemoteObjectID:
			cargs[i] = &proto.RuntimeCallArgument{ObjectID: v}
		default:
			cargs[i] = &proto.RuntimeCallArgument{Value: gson.New(v)}
		}
	}
	return cargs
}

// evalObject calls fn (a function declaration) in the page's main world
// with args and returns the object it returns ("" for null).
func evalObject(ctx context.Context, sess *rod.Page, fn string, args ...any) (proto.RuntimeRemoteObjectID, error) {
	enc, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	r, err := proto.RuntimeEvaluate{
		Expression: "(" + fn + ").apply(undefined, " + string(enc) + ")", AwaitPromise: true,
	}.Call(sess.Context(ctx))
	if err != nil {
		return "", classify(err)
	}
	if r.ExceptionDetails != nil {
		return "", fmt.Errorf("page script failed: %s", exceptionText(r.ExceptionDetails))
	}
	return r.Result.ObjectID, nil
}

// evalValue evaluates an expression in the page's main world and decodes
// its (awaited) value into out.
func evalValue(ctx context.Context, sess *rod.Page, expr string, out any) error {
	r, err := proto.RuntimeEvaluate{Expression: expr, AwaitPromise: true, ReturnByValue: true}.Call(sess.Context(ctx))
	if err != nil {
		return classify(err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("page script failed: %s", exceptionText(r.ExceptionDetails))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(r.Result.Value.JSON("", "")), out)
}

func exceptionText(d *proto.RuntimeExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return strings.SplitN(d.Exception.Description, "\n", 2)[0]
	}
	return d.Text
}

// release frees a remote object; failures do not matter (a navigation
// frees it anyway).
func release(ctx context.Context, sess *rod.Page, obj proto.RuntimeRemoteObjectID) {
	if obj != "" {
		_ = proto.RuntimeReleaseObject{ObjectID: obj}.Call(sess.Context(ctx))
	}
}
