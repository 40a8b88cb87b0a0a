package trace_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// profile builds the page the fingerprints are taken on (v1) and its
// variants: a header, a profile form with Cancel / Save, an export button
// with a test id, and a members table with Edit / Delete per row.
type profile struct {
	banner  string   // markup before everything (an inserted element)
	actions string   // the form's buttons
	top     bool     // actions above the fields (moved)
	export  string   // the export button
	rows    []string // member names, one row each
}

func (p profile) html() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><title>Profile</title><style>td{padding:4px 12px}</style>`)
	b.WriteString(p.banner)
	b.WriteString(`<header><nav><a href="/">Home</a> <a href="/orders">Orders</a></nav></header><main><h1>Profile</h1><form id="profile">`)
	fields := `<div><label for="name">Full name</label> <input id="name" name="name"></div>
<div><label for="email">Email</label> <input id="email" name="email" type="email"></div>`
	actions := `<div class="actions">` + p.actions + `</div>`
	if p.top {
		b.WriteString(actions + fields)
	} else {
		b.WriteString(fields + actions)
	}
	b.WriteString(`</form><section><h2>Data</h2>` + p.export + `</section><h2>Members</h2><table>`)
	for _, r := range p.rows {
		fmt.Fprintf(&b, `<tr><td>%s</td><td><button>Edit</button></td><td><button>Delete</button></td></tr>`, r)
	}
	b.WriteString(`</table></main>`)
	return b.String()
}

var v1 = profile{
	actions: `<button type="button">Cancel</button> <button type="submit">Save</button>`,
	export:  `<button data-testid="export-csv">Export</button>`,
	rows:    []string{"Alice", "Bob"},
}

func variant(f func(*profile)) string {
	p := v1
	p.rows = append([]string(nil), v1.rows...)
	f(&p)
	return p.html()
}

func TestMatch(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/v1": v1.html(),
		"/renamed": variant(func(p *profile) {
			p.actions = `<button type="button">Cancel</button> <button type="submit">Save changes</button>`
		}),
		"/moved": variant(func(p *profile) {
			p.top = true
			p.actions = `<button type="submit">Save</button> <button type="button">Cancel</button>`
		}),
		"/inserted": variant(func(p *profile) {
			p.banner = `<div role="alert">New! <a href="/tour">Take the tour</a> <button>Dismiss</button></div>`
			p.actions = `<button type="button">Cancel</button> <button type="button">Preview</button> <button type="submit">Save</button>`
		}),
		"/relabelled":  variant(func(p *profile) { p.export = `<button data-testid="export-csv">Download spreadsheet</button>` }),
		"/rows":        variant(func(p *profile) { p.rows = []string{"Carol", "Bob", "Alice"} }),
		"/ambiguous":   variant(func(p *profile) { p.rows = []string{"Alice", "Alice"} }),
		"/removed":     variant(func(p *profile) { p.actions = `<button type="button">Cancel</button>` }),
		"/removed-all": variant(func(p *profile) { p.actions = `<button type="button">Cancel</button>`; p.rows = nil; p.export = "" }),
	})
	page := newPage(t)
	snap, details := look(t, page, base+"/v1", 0)
	save := capture(t, snap, details, "button", "Save", "")
	export := capture(t, snap, details, "button", "Export", "")
	deleteBob := capture(t, snap, details, "button", "Delete", "Bob")
	deleteAlice := capture(t, snap, details, "button", "Delete", "Alice")
	require.Equal(t, "export-csv", export.Attrs["data-testid"])

	type want struct {
		role, name, context string // the element expected, "" for none
		confident           bool
	}
	tests := []struct {
		name string
		path string
		fp   trace.Fingerprint
		want want
	}{
		{"same page", "/v1", save, want{"button", "Save", "", true}},
		{"same page, row", "/v1", deleteBob, want{"button", "Delete", "Bob", true}},
		{"button renamed", "/renamed", save, want{"button", "Save changes", "", true}},
		{"element moved", "/moved", save, want{"button", "Save", "", true}},
		{"element inserted before", "/inserted", save, want{"button", "Save", "", true}},
		{"test id kept, text changed", "/relabelled", export, want{"button", "Download spreadsheet", "", true}},
		{"identical buttons told apart by row", "/rows", deleteBob, want{"button", "Delete", "Bob", true}},
		{"identical buttons, other row", "/rows", deleteAlice, want{"button", "Delete", "Alice", true}},
		{"ambiguous rows", "/ambiguous", deleteAlice, want{confident: false}},
		{"target removed", "/removed", save, want{"button", "Cancel", "", false}},
		{"target removed, nothing like it", "/removed-all", deleteBob, want{confident: false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live, liveDetails := look(t, page, base+tc.path, 0)
			check := func(res trace.Resolution, how string) {
				t.Helper()
				t.Logf("%s: %s; runners %+v", how, res.Reason, res.Runners)
				require.Equal(t, tc.want.confident, res.Confident, "%s: %s", how, res.Reason)
				if tc.want.role != "" {
					require.Equal(t, element(t, live, tc.want.role, tc.want.name, tc.want.context).Ref, res.Ref, "%s: %s", how, res.Reason)
				}
				require.NotEmpty(t, res.Reason)
				if len(res.Runners) > 0 {
					require.LessOrEqual(t, res.Runners[0].Score, res.Score)
				}
			}
			// All details read.
			res := trace.Match(tc.fp, live, liveDetails)
			check(res, "all details")
			// Details of the shortlist only: what replay does.
			short := trace.Shortlist(tc.fp, live, 0)
			picked := make(map[string]browser.ElementDetails, len(short))
			for _, ref := range short {
				picked[ref] = liveDetails[ref]
			}
			res2 := trace.Match(tc.fp, live, picked)
			check(res2, "shortlist details")
			// Deterministic.
			require.Equal(t, res2, trace.Match(tc.fp, live, picked))
		})
	}

	t.Run("without details", func(t *testing.T) {
		live, _ := look(t, page, base+"/v1", 0)
		res := trace.Match(save, live, nil)
		require.True(t, res.Confident, res.Reason)
		require.Equal(t, element(t, live, "button", "Save", "").Ref, res.Ref)
	})
	t.Run("a different role weighs heavily", func(t *testing.T) {
		p := save
		p.Role = "link"
		res := trace.Match(p, snap, details)
		require.Less(t, res.Score, trace.Match(save, snap, details).Score*0.9)
	})
}

func TestCapture(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": `<!doctype html><title>Login</title><main><h1>Sign in</h1>
<form><label>Email <input name="email" type="email" data-testid="email" value="alice@example.com"></label>
<label>Password <input type="password" name="pw" value="hunter2-secret"></label>
<label><input type="checkbox" name="remember"> Remember me</label>
<select aria-label="Language"><option>English</option><option>Deutsch</option></select>
<button>Sign in</button></form></main>`})
	page := newPage(t)
	snap, details := look(t, page, base+"/", 0)

	email := capture(t, snap, details, "textbox", "Email", "")
	require.Equal(t, "email", email.ValueKind)
	require.Equal(t, "input", email.Tag)
	require.Equal(t, "email", email.Attrs["data-testid"])
	require.Equal(t, "main > form > label:nth-of-type(1) > input", email.Path)
	require.Equal(t, []trace.Neighbour{{Role: "heading", Name: "Sign in"}}, email.Before)
	require.Len(t, email.After, 2)
	require.Equal(t, trace.Size{Width: snap.Viewport.Width, Height: snap.Viewport.Height}, email.Viewport)

	kinds := []struct{ role, name, kind string }{
		{"textbox", "Password", "password"},
		{"checkbox", "Remember me", "toggle"},
		{"combobox", "Language", "choice"},
		{"button", "Sign in", ""},
	}
	for _, k := range kinds {
		fp := capture(t, snap, details, k.role, k.name, "")
		require.Equal(t, k.kind, fp.ValueKind, k.name)
	}

	// Stored as JSON with stable names; no typed value is part of it.
	pw := capture(t, snap, details, "textbox", "Password", "")
	for _, fp := range []trace.Fingerprint{email, pw} {
		b, err := json.Marshal(fp)
		require.NoError(t, err)
		require.NotContains(t, string(b), "alice@example.com")
		require.NotContains(t, string(b), "hunter2")
		for _, key := range []string{`"role":`, `"name":`, `"tag":`, `"path":`, `"box":`, `"viewport":`, `"value_kind":`, `"attrs":`} {
			require.Contains(t, string(b), key)
		}
		var back trace.Fingerprint
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, fp, back)
	}

	_, err := trace.Capture(snap, "@e999", browser.ElementDetails{})
	require.ErrorIs(t, err, trace.ErrNotInSnapshot)
}
