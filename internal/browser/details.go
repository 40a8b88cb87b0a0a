package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// ElementDetails is what the DOM says about a snapshot element beyond its
// listing: what a fingerprint needs to find the element again on a later
// visit (internal/trace). It never holds a form value.
type ElementDetails struct {
	// Tag is the element's lower-case tag name ("button", "input").
	Tag string `json:"tag"`
	// Attrs are the stable attributes present on the element, as written
	// (each at most 200 characters): id, name, type, placeholder,
	// aria-label, data-testid, data-test, data-qa, data-cy, href, role,
	// title, alt, for.
	Attrs map[string]string `json:"attrs,omitempty"`
	// Path is a CSS path from the element's root (its document, below
	// body, or its shadow root) such as
	// "main > form#signup > div:nth-of-type(2) > button": ids are
	// included, nth-of-type only where siblings share the tag. An element
	// in a shadow root is prefixed with its host's path and " >> ".
	Path string `json:"path"`
	// Text is the element's own visible text (innerText), whitespace
	// collapsed, at most 200 characters.
	Text string `json:"text,omitempty"`
}

// detailsTimeout bounds one ElementDetails call.
const detailsTimeout = 5 * time.Second

// detailsGroup is the object group of the nodes ElementDetails resolves;
// released when it returns.
const detailsGroup = "wayfinder-details"

// detailsJS describes every element it is given (this and the arguments
// are the same elements' frame) in one call.
const detailsJS = `function(...els) {
	const ATTRS = ["id","name","type","placeholder","aria-label","data-testid","data-test","data-qa","data-cy","href","role","title","alt","for"];
	const cap = (s, n) => s.length > n ? s.slice(0, n) : s;
	const seg = e => {
		let s = e.localName;
		if (e.id) return s + "#" + CSS.escape(e.id);
		const p = e.parentNode;
		if (p && p.children) {
			let n = 0, k = 0;
			for (const c of p.children) {
				if (c.localName !== e.localName) continue;
				n++;
				if (c === e) k = n;
			}
			if (n > 1) s += ":nth-of-type(" + k + ")";
		}
		return s;
	};
	const path = e => {
		const parts = [];
		let n = e;
		for (; n && n.nodeType === 1; n = n.parentNode) {
			if (n.localName === "body" || n.localName === "html") break;
			parts.unshift(seg(n));
		}
		let out = parts.join(" > ");
		if (n && n.nodeType === 11 && n.host) out = path(n.host) + " >> " + out;
		return out;
	};
	return els.map(e => {
		if (!e || e.nodeType !== 1 || !e.isConnected) return null;
		const attrs = {};
		for (const a of ATTRS) {
			const v = e.getAttribute(a);
			if (v !== null && v !== "") attrs[a] = cap(v, 200);
		}
		const text = cap(((e.innerText !== undefined ? e.innerText : e.textContent) || "").replace(/\s+/g, " ").trim(), 200);
		return {tag: e.localName, attrs, path: path(e), text};
	});
}`

// ElementDetails reads the tag, stable attributes, DOM path and visible
// text of refs of the page's latest snapshot: the nodes are resolved
// concurrently, then each frame's nodes are described by one
// Runtime.callFunctionOn. A ref whose node left the page is absent from
// the map. The call takes at most 5 s. Errors wrap ErrRefInvalid (a ref
// not in the latest snapshot) or ErrBrowserGone, or are ctx's.
func (pg *Page) ElementDetails(ctx context.Context, refs ...string) (map[string]ElementDetails, error) {
	out := make(map[string]ElementDetails, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	nodes := make([]NodeRef, 0, len(refs))
	seen := make(map[string]bool, len(refs))
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		nr, err := pg.refs.lookupRef("", ref)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, nr)
	}
	dctx, cancel := context.WithTimeout(ctx, detailsTimeout)
	defer cancel()
	p := pg.p.Context(dctx)
	defer func() {
		// Released on the page's own context: dctx may be over.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = proto.RuntimeReleaseObjectGroup{ObjectGroup: detailsGroup}.Call(pg.p.Context(rctx))
	}()

	objs := make([]proto.RuntimeRemoteObjectID, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for k, nr := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := proto.DOMResolveNode{BackendNodeID: nr.BackendNodeID, ObjectGroup: detailsGroup}.Call(p)
			if err != nil {
				errs[k] = err
				return
			}
			objs[k] = r.Object.ObjectID
		})
	}
	wg.Wait()
	if err := pg.detailsErr(ctx, dctx, errs); err != nil {
		return nil, err
	}

	// Objects of one frame share an execution context and can go to one
	// call; another frame's objects cannot be passed as its arguments.
	byFrame := make(map[proto.PageFrameID][]int)
	var frames []proto.PageFrameID
	for k, nr := range nodes {
		if objs[k] == "" {
			continue // the node left the page
		}
		if _, ok := byFrame[nr.FrameID]; !ok {
			frames = append(frames, nr.FrameID)
		}
		byFrame[nr.FrameID] = append(byFrame[nr.FrameID], k)
	}
	results := make([][]*ElementDetails, len(frames))
	errs = make([]error, len(frames))
	for f, frame := range frames {
		idx := byFrame[frame]
		wg.Go(func() {
			args := make([]*proto.RuntimeCallArgument, len(idx))
			for i, k := range idx {
				args[i] = &proto.RuntimeCallArgument{ObjectID: objs[k]}
			}
			res, err := proto.RuntimeCallFunctionOn{
				FunctionDeclaration: detailsJS, ObjectID: objs[idx[0]], Arguments: args,
				ReturnByValue: true, Silent: true,
			}.Call(p)
			if err != nil {
				errs[f] = err
				return
			}
			if res.ExceptionDetails != nil {
				errs[f] = fmt.Errorf("element details: %s", res.ExceptionDetails.Text)
				return
			}
			var ds []*ElementDetails
			if err := json.Unmarshal([]byte(res.Result.Value.JSON("", "")), &ds); err != nil {
				errs[f] = fmt.Errorf("element details: %w", err)
				return
			}
			results[f] = ds
		})
	}
	wg.Wait()
	if err := pg.detailsErr(ctx, dctx, errs); err != nil {
		return nil, err
	}
	for f, frame := range frames {
		for i, k := range byFrame[frame] {
			if i < len(results[f]) && results[f][i] != nil {
				out[nodes[k].Ref] = *results[f][i]
			}
		}
	}
	return out, nil
}

// detailsErr turns the failures of one ElementDetails phase into its
// error: ctx's, the 5 s bound, the browser gone. A node that no longer
// resolves is not an error (it is left out).
func (pg *Page) detailsErr(ctx, dctx context.Context, errs []error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("element details: %w", context.Cause(ctx))
	}
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if err = classify(err); errors.Is(err, ErrBrowserGone) {
			return fmt.Errorf("element details: %w", err)
		}
		if first == nil {
			first = err
		}
	}
	if dctx.Err() != nil {
		return fmt.Errorf("element details: no answer within %s: %w", detailsTimeout, context.DeadlineExceeded)
	}
	var cdpErr *cdp.Error
	if first != nil && !errors.As(first, &cdpErr) {
		return fmt.Errorf("element details: %w", first)
	}
	return nil
}
