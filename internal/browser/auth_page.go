package browser

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-rod/rod"
)

// What per-domain auth needs from a page beyond actions: which target and
// context it is, and re-applying cookies and storage after a 401.

// TargetID is the page's CDP target id (DocumentResponse.TargetID).
func (pg *Page) TargetID() string { return string(pg.p.TargetID) }

// ContextID is the id of the browser context the page belongs to; a
// replacement context after a crash has another.
func (pg *Page) ContextID() string { return string(pg.p.Browser().BrowserContextID) }

// StoreCookies stores cookies in the page's browser context, as
// NetworkRules.Cookies does at the start.
func (pg *Page) StoreCookies(ctx context.Context, cookies []NetworkCookie) error {
	for i, c := range cookies {
		if c.Name == "" || (c.URL == "" && c.Domain == "") {
			return fmt.Errorf("%w: cookies[%d]: a cookie needs a name and a url or a domain", ErrNetworkRules, i)
		}
	}
	return storeCookies(ctx, pg.p.Browser(), cookies)
}

// StoreLocalStorage writes items into localStorage when the page's document
// is of origin ("scheme://host[:port]"); ok is false when it is not (and
// nothing was written).
func (pg *Page) StoreLocalStorage(ctx context.Context, origin string, items map[string]string) (ok bool, err error) {
	o, err := parseOrigin(origin)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrNetworkRules, err)
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return false, fmt.Errorf("store localStorage: %w", err)
	}
	res, err := pg.p.Context(ctx).Evaluate(rod.Eval(`(origin, items) => {
		if (location.origin !== origin) return false;
		for (const [k, v] of Object.entries(JSON.parse(items))) localStorage.setItem(k, v);
		return true;
	}`, o.Scheme+"://"+o.Host, string(raw)))
	if err != nil {
		return false, classify(fmt.Errorf("store localStorage of %s: %w", origin, err))
	}
	return res.Value.Bool(), nil
}
