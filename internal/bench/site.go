package bench

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"strings"
	"time"
)

//go:embed testdata/site/*.html
var siteFiles embed.FS

// Target names the element a page's action clicks, the way a model would
// pick it from a snapshot: the first element with this role and accessible
// name (identical controls resolve to the first, in document order).
type Target struct {
	Role, Name string
}

// String renders the target as a snapshot line would show it.
func (t Target) String() string { return fmt.Sprintf("%s %q", t.Role, t.Name) }

// Page is one benchmark page.
type Page struct {
	// Name is short and stable; it labels the report's rows.
	Name string
	// Path is the page's path on the site.
	Path string
	// About says what the page holds, for the report.
	About string
	// Click is clicked once per iteration; every click mutates the page
	// (a counter in a status line) without navigating.
	Click Target
}

// Pages is the fixed benchmark set, in report order. The pages are
// deterministic (no randomness, no clock), so figures of two runs compare.
func Pages() []Page {
	return []Page{
		{Name: "form", Path: "/form.html", About: "sign-up form: 4 fieldsets, 19 fields (text, email, date, password, selects, radios, checkboxes, textarea), 3 buttons",
			Click: Target{Role: "button", Name: "Save draft"}},
		{Name: "table", Path: "/table.html", About: fmt.Sprintf("orders table: %d rows × 6 columns, an Edit and a Delete button in every row, filters, pager", tableRows),
			Click: Target{Role: "button", Name: "Edit"}},
		{Name: "many", Path: "/many.html", About: fmt.Sprintf("admin console: %d interactive elements (%d sections of links, buttons, checkboxes)", manySections*30+1, manySections),
			Click: Target{Role: "button", Name: "Refresh"}},
		{Name: "shadow", Path: "/shadow.html", About: "web components: 21 open shadow roots (search box, 20 cards with buttons and links), 1 closed shadow root (card form)",
			Click: Target{Role: "button", Name: "Follow"}},
		{Name: "iframes", Path: "/iframes.html", About: "checkout: a same-origin iframe (sign-in form) and a cross-origin iframe (payment form, another site)",
			Click: Target{Role: "button", Name: "Sign in"}},
		{Name: "article", Path: "/article.html", About: fmt.Sprintf("news article: %d paragraphs of text, 40 navigation links, comments", articleParagraphs),
			Click: Target{Role: "button", Name: "Like"}},
	}
}

// Site serves the benchmark pages on loopback: the pages on one origin and
// the cross-origin frame on another site (localhost instead of 127.0.0.1,
// so Chromium puts it in its own process, as a real third-party frame).
type Site struct {
	// URL is the pages' origin, http://127.0.0.1:PORT.
	URL string
	// CrossOriginURL is the third-party origin, http://localhost:PORT.
	CrossOriginURL string

	servers []*http.Server
}

// StartSite starts the two servers; Close stops them.
func StartSite() (*Site, error) {
	main, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the benchmark site: %w", err)
	}
	cross, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		main.Close()
		return nil, fmt.Errorf("listen for the benchmark site: %w", err)
	}
	s := &Site{
		URL:            "http://" + main.Addr().String(),
		CrossOriginURL: fmt.Sprintf("http://localhost:%d", cross.Addr().(*net.TCPAddr).Port),
	}
	h, err := s.handler()
	if err != nil {
		main.Close()
		cross.Close()
		return nil, err
	}
	for _, l := range []net.Listener{main, cross} {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go func() { _ = srv.Serve(l) }()
	}
	return s, nil
}

// Close stops the servers.
func (s *Site) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		_ = srv.Shutdown(ctx)
	}
}

// handler serves every page from memory; pages are rendered once.
func (s *Site) handler() (http.Handler, error) {
	pages := map[string][]byte{
		"/table.html":   tablePage(),
		"/many.html":    manyPage(),
		"/article.html": articlePage(),
	}
	entries, err := siteFiles.ReadDir("testdata/site")
	if err != nil {
		return nil, fmt.Errorf("read embedded site: %w", err)
	}
	for _, e := range entries {
		b, err := siteFiles.ReadFile("testdata/site/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded site: %w", err)
		}
		pages["/"+e.Name()] = bytes.ReplaceAll(b, []byte("{{CROSS_ORIGIN}}"), []byte(s.CrossOriginURL))
	}
	icon, err := faviconPNG()
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			// A real icon keeps a 404 out of the console, which Playwright
			// MCP would otherwise report in every response.
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(icon)
			return
		}
		b, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	}), nil
}

func faviconPNG() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := range 16 {
		for j := range 16 {
			img.Set(i, j, color.RGBA{R: 40, G: 90, B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encode favicon: %w", err)
	}
	return b.Bytes(), nil
}

const (
	tableRows         = 500
	manySections      = 100
	articleParagraphs = 60
)

var (
	firstNames = []string{"Olivia", "Liam", "Emma", "Noah", "Ava", "Elijah", "Sophia", "Mateo", "Isabella", "Lucas", "Mia", "Levi", "Amelia", "Ezra", "Harper"}
	lastNames  = []string{"Smith", "Garcia", "Chen", "Okafor", "Müller", "Rossi", "Kowalski", "Nakamura", "Silva", "Dubois", "Novak", "Haddad", "Jensen"}
	statuses   = []string{"Pending", "Paid", "Shipped", "Delivered", "Refunded", "Cancelled"}
)

// tablePage renders the orders table: hundreds of rows whose actions have
// identical names, the case that makes a snapshot ambiguous.
func tablePage() []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Orders</title>
<style>body{font:14px/1.3 sans-serif;margin:16px} table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:3px 6px}</style>
</head><body>
<nav aria-label="Main"><a href="/">Dashboard</a> · <a href="/orders">Orders</a> · <a href="/customers">Customers</a> · <a href="/reports">Reports</a></nav>
<h1>Orders</h1>
<form role="search" onsubmit="return false"><label>Filter <input type="search" name="q" placeholder="Customer or order number"></label>
<label>Status <select name="status"><option>All</option>`)
	for _, s := range statuses {
		fmt.Fprintf(&b, "<option>%s</option>", s)
	}
	b.WriteString(`</select></label> <button type="submit">Apply</button></form>
<p role="status" id="status">No order selected.</p>
<table><caption>Orders, newest first</caption><thead><tr><th>Order</th><th>Customer</th><th>Date</th><th>Status</th><th>Total</th><th>Actions</th></tr></thead><tbody>
`)
	for i := range tableRows {
		n := 100000 + tableRows - i
		name := firstNames[i%len(firstNames)] + " " + lastNames[(i*7)%len(lastNames)]
		fmt.Fprintf(&b, `<tr><td><a href="/orders/%d">#%d</a></td><td>%s</td><td>2026-%02d-%02d</td><td>%s</td><td>$%d.%02d</td><td><button type="button" class="edit" data-order="%d">Edit</button> <button type="button" class="delete">Delete</button></td></tr>
`, n, n, name, 12-i%12, 1+(i*3)%28, statuses[(i*5)%len(statuses)], 20+(i*37)%900, (i*13)%100, n)
	}
	b.WriteString(`</tbody></table>
<nav aria-label="Pages"><a href="?page=1">1</a> <a href="?page=2">2</a> <a href="?page=3">3</a> <a href="?page=2">Next</a></nav>
<script>
  let edits = 0;
  document.querySelector('tbody').addEventListener('click', (e) => {
    const btn = e.target.closest('button.edit');
    if (!btn) return;
    edits++;
    document.getElementById('status').textContent = 'Editing order #' + btn.dataset.order + ' (' + edits + ').';
  });
</script>
</body></html>`)
	return []byte(b.String())
}

// manyPage renders thousands of interactive elements: far more than fit in
// any model's budget, so it measures how a snapshot copes with excess.
func manyPage() []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Admin console</title>
<style>body{font:13px sans-serif;margin:12px} section{border-top:1px solid #ccc;margin:6px 0} a,button,label{margin:2px}</style>
</head><body>
<h1>Admin console</h1>
<button type="button" id="refresh">Refresh</button> <span role="status" id="status">Never refreshed.</span>
`)
	for s := range manySections {
		fmt.Fprintf(&b, "<section><h2>Service %d</h2><div>", s+1)
		for i := range 10 {
			fmt.Fprintf(&b, `<a href="/svc/%d/page/%d">Page %d.%d</a> `, s+1, i+1, s+1, i+1)
		}
		b.WriteString("</div><div>")
		for i := range 10 {
			fmt.Fprintf(&b, `<button type="button">Action %d.%d</button> `, s+1, i+1)
		}
		b.WriteString("</div><div>")
		for i := range 10 {
			fmt.Fprintf(&b, `<label><input type="checkbox"%s> Flag %d.%d</label> `, map[bool]string{true: " checked"}[(s+i)%3 == 0], s+1, i+1)
		}
		b.WriteString("</div></section>\n")
	}
	b.WriteString(`<script>
  let n = 0;
  document.getElementById('refresh').addEventListener('click', () => {
    n++;
    document.getElementById('status').textContent = 'Refreshed ' + n + ' times.';
  });
</script></body></html>`)
	return []byte(b.String())
}

// articlePage renders a long read: mostly text, a few controls, the kind
// of page where an accessibility dump spends its tokens on prose.
func articlePage() []byte {
	sentences := []string{
		"The city council approved the new transit plan on Tuesday after a debate that lasted well past midnight.",
		"Supporters argued that the expanded bus network would cut average commute times by a fifth within three years.",
		"Opponents questioned the cost estimates, noting that the last two projects ran over budget by a wide margin.",
		"Residents who spoke at the meeting were divided, with many asking for more frequent service at night.",
		"The plan adds four express routes, rebuilds twelve stations and replaces a third of the ageing fleet.",
		"Funding comes from a mix of state grants, a modest fare increase and bonds to be issued next spring.",
		"Engineers expect construction to begin in the autumn, starting with the busiest corridor downtown.",
		"Local businesses along the route have asked for help to cope with the disruption during the works.",
	}
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Council approves transit plan</title>
<style>body{font:16px/1.6 Georgia,serif;margin:24px auto;max-width:720px}</style>
</head><body><header><nav aria-label="Sections">`)
	for i := range 40 {
		fmt.Fprintf(&b, `<a href="/section/%d">Section %d</a> `, i+1, i+1)
	}
	b.WriteString(`</nav></header><main><article><h1>Council approves transit plan after late-night debate</h1>
<p>By Jordan Rivera · 12 March 2026 · 8 min read</p>
<button type="button" id="like">Like</button> <span role="status" id="status">0 likes</span>
`)
	for p := range articleParagraphs {
		if p%10 == 0 {
			fmt.Fprintf(&b, "<h2>Part %d</h2>\n", p/10+1)
		}
		b.WriteString("<p>")
		for s := range 4 {
			b.WriteString(sentences[(p*3+s)%len(sentences)])
			b.WriteString(" ")
		}
		b.WriteString("</p>\n")
	}
	b.WriteString(`</article><section aria-label="Comments"><h2>Comments</h2>
<label>Add a comment <textarea name="comment"></textarea></label> <button type="button">Post comment</button></section></main>
<footer><a href="/about">About us</a> · <a href="/privacy">Privacy</a> · <a href="/terms">Terms</a></footer>
<script>
  let likes = 0;
  document.getElementById('like').addEventListener('click', () => {
    likes++;
    document.getElementById('status').textContent = likes + ' likes';
  });
</script></body></html>`)
	return []byte(b.String())
}

// errNoTarget: a snapshot did not contain the page's click target.
var errNoTarget = errors.New("click target not in snapshot")
