package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// ExtractSpec is the schema of an extract action (seed 004 web.extract).
type ExtractSpec struct {
	// Rows is a CSS selector matching each item (open shadow roots
	// included).
	Rows string `json:"rows"`
	// Fields maps output keys to what to read in a row: "css" is the text
	// of the row's first match, "css@attr" its attribute (href and src as
	// absolute URLs), "@attr" an attribute of the row itself, "" the row's
	// own text. A field whose element is missing reads "".
	Fields map[string]string `json:"fields"`
	// Limit caps the rows returned. Default 50, at most 1000.
	Limit int `json:"limit,omitempty"`
}

// Limits of ExtractSpec.Limit.
const (
	DefaultExtractLimit = 50
	MaxExtractLimit     = 1000
)

func (s *ExtractSpec) validate() error {
	switch {
	case s == nil || s.Rows == "":
		return fail(CodeInvalidParams, "extract needs a rows selector and fields")
	case len(s.Fields) == 0:
		return fail(CodeInvalidParams, "extract needs at least one field")
	case s.Limit < 0 || s.Limit > MaxExtractLimit:
		return fail(CodeInvalidParams, "limit must be between 1 and %d", MaxExtractLimit)
	}
	return nil
}

// doExtract reads rows of fields from the page.
func (pg *Page) doExtract(ctx context.Context, a Action, out *outcome) error {
	limit := a.Extract.Limit
	if limit == 0 {
		limit = DefaultExtractLimit
	}
	args, err := json.Marshal([]any{a.Extract.Rows, a.Extract.Fields, limit})
	if err != nil {
		return fail(CodeInvalidParams, "extract: %v", err)
	}
	var r struct {
		Rows    []map[string]string `json:"rows"`
		Matched int                 `json:"matched"`
	}
	if err := evalValue(ctx, pg.p, "("+jsExtract+").apply(undefined, "+string(args)+")", &r); err != nil {
		if strings.Contains(err.Error(), "SyntaxError") || strings.Contains(err.Error(), "not a valid selector") {
			return fail(CodeInvalidParams, "invalid selector in extract: %v", err)
		}
		return err
	}
	out.res.Rows, out.res.RowsMatched = r.Rows, r.Matched
	if out.res.Rows == nil {
		out.res.Rows = []map[string]string{}
	}
	return nil
}

// Cookie is a cookie of the session.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Domain and Path scope the cookie; a cookie to set needs Domain or
	// URL.
	Domain string `json:"domain,omitempty"`
	Path   string `json:"path,omitempty"`
	// URL sets the cookie as if URL had set it (set only).
	URL string `json:"url,omitempty"`
	// Expires is zero for a session cookie.
	Expires  time.Time `json:"expires,omitzero"`
	HTTPOnly bool      `json:"http_only,omitempty"`
	Secure   bool      `json:"secure,omitempty"`
	// SameSite is Strict, Lax or None; empty leaves the browser's default.
	SameSite string `json:"same_site,omitempty"`
}

// doGetCookies lists the session's cookies, or those sent to a.URL.
func (pg *Page) doGetCookies(ctx context.Context, a Action, out *outcome) error {
	var cs []*proto.NetworkCookie
	if a.URL != "" {
		r, err := proto.NetworkGetCookies{Urls: []string{a.URL}}.Call(pg.p.Context(ctx))
		if err != nil {
			return classify(fmt.Errorf("read cookies: %w", err))
		}
		cs = r.Cookies
	} else {
		b := pg.tab.tracker.b
		r, err := proto.StorageGetCookies{BrowserContextID: b.BrowserContextID}.Call(b.Context(ctx))
		if err != nil {
			return classify(fmt.Errorf("read cookies: %w", err))
		}
		cs = r.Cookies
	}
	out.res.Cookies = make([]Cookie, 0, len(cs))
	for _, c := range cs {
		ck := Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite)}
		if !c.Session && c.Expires > 0 {
			sec, frac := math.Modf(float64(c.Expires))
			ck.Expires = time.Unix(int64(sec), int64(frac*1e9)).UTC()
		}
		out.res.Cookies = append(out.res.Cookies, ck)
	}
	return nil
}

// doSetCookies stores cookies in the session, for domains the policy
// allows.
func (pg *Page) doSetCookies(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	params := make([]*proto.NetworkCookieParam, 0, len(a.Cookies))
	for _, c := range a.Cookies {
		u := c.URL
		if u == "" {
			u = "https://" + strings.TrimPrefix(c.Domain, ".") + "/"
		}
		if err := checkPolicy(ctx, opts.Policy, u); err != nil {
			return err
		}
		switch c.SameSite {
		case "", "Strict", "Lax", "None":
		default:
			return fail(CodeInvalidParams, "cookie %q: same_site must be Strict, Lax or None", c.Name)
		}
		p := &proto.NetworkCookieParam{
			Name: c.Name, Value: c.Value, URL: c.URL, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: proto.NetworkCookieSameSite(c.SameSite),
		}
		if !c.Expires.IsZero() {
			p.Expires = proto.TimeSinceEpoch(float64(c.Expires.UnixNano()) / 1e9)
		}
		params = append(params, p)
	}
	b := pg.tab.tracker.b
	if err := (proto.StorageSetCookies{Cookies: params, BrowserContextID: b.BrowserContextID}).Call(b.Context(ctx)); err != nil {
		return fail(CodeActionFailed, "the browser refused the cookies: %v", err)
	}
	out.acted = true
	return nil
}

// doScreenshot captures the viewport or the whole page.
func (pg *Page) doScreenshot(ctx context.Context, a Action, out *outcome) error {
	img, err := pg.Capture(ctx, ScreenshotOptions{Format: a.Format, Quality: a.Quality, FullPage: a.FullPage})
	if err != nil {
		return err
	}
	out.res.Screenshot = img
	return nil
}
