package browser

import (
	"context"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// EvalJS evaluates the function expression js in the page's top frame and
// returns its value (tests only).
func EvalJS(ctx context.Context, pg *Page, js string, args ...any) (gson.JSON, error) {
	res, err := pg.p.Context(ctx).Eval(js, args...)
	if err != nil {
		return gson.JSON{}, fmt.Errorf("eval: %w", err)
	}
	return res.Value, nil
}

// ResolveRef looks a ref up in the page's ref table, resolves its backend
// node with DOM.resolveNode and returns the node's "id|TAG" as the page
// sees it (tests only).
func ResolveRef(ctx context.Context, pg *Page, snapshotID, ref string) (NodeRef, string, error) {
	r, err := pg.refs.lookupRef(snapshotID, ref)
	if err != nil {
		return NodeRef{}, "", err
	}
	p := pg.p.Context(ctx)
	obj, err := proto.DOMResolveNode{BackendNodeID: r.BackendNodeID}.Call(p)
	if err != nil {
		return r, "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	res, err := proto.RuntimeCallFunctionOn{
		ObjectID:            obj.Object.ObjectID,
		FunctionDeclaration: `function() { return (this.id || "") + "|" + this.tagName; }`,
		ReturnByValue:       true,
	}.Call(p)
	if err != nil {
		return r, "", fmt.Errorf("describe %s: %w", ref, err)
	}
	return r, res.Result.Value.Str(), nil
}
