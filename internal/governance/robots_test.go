package governance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func allowed(t *testing.T, r *robotsRules, raw string) bool {
	t.Helper()
	u, err := url.Parse("https://example.com" + raw)
	require.NoError(t, err)
	return r.Allowed(u)
}

func TestParseRobotsGroups(t *testing.T) {
	t.Parallel()
	const txt = `
# comment
User-agent: Googlebot
Disallow: /

User-agent: *
Disallow: /private
Allow: /private/open

User-agent: wayfinder/2.1
User-agent: other
Disallow: /nowayfinder   # trailing comment
Sitemap: https://example.com/sitemap.xml
Crawl-delay: 4
Disallow: /also

user-agent: WAYFINDER
disallow: /third
`
	r := parseRobots([]byte(txt), UserAgent)
	for path, want := range map[string]bool{
		"/":                   true,
		"/private":            true, // Wayfinder's groups replace the * group
		"/nowayfinder":        false,
		"/nowayfinder/x?y=1":  false,
		"/also":               false, // rules after sitemap/crawl-delay stay in the group
		"/third":              false, // groups for the same agent are combined
		"/robots.txt":         true,
		"/somewhere/else.php": true,
	} {
		require.Equal(t, want, allowed(t, r, path), path)
	}

	star := parseRobots([]byte(txt), "SomethingElse")
	require.False(t, allowed(t, star, "/private/x"))
	require.True(t, allowed(t, star, "/private/open/x"), "the longer allow wins")
	require.True(t, allowed(t, star, "/nowayfinder"))
}

func TestRobotsMatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rules string
		path  string
		want  bool
	}{
		{"no rules", "", "/x", true},
		{"empty disallow allows", "Disallow:", "/x", true},
		{"prefix", "Disallow: /fish", "/fish.html", false},
		{"prefix is case-sensitive", "Disallow: /fish", "/Fish.asp", true},
		{"star", "Disallow: /*.php", "/filename.php", false},
		{"star deep", "Disallow: /*.php", "/folder/any.php.file.html", false},
		{"star needs the rest", "Disallow: /*.php", "/windows.PHP", true},
		{"dollar anchors", "Disallow: /*.php$", "/folder/filename.php", false},
		{"dollar rejects more", "Disallow: /*.php$", "/filename.php?parameters", true},
		{"dollar rejects longer", "Disallow: /*.php$", "/filename.php5", true},
		{"query counts", "Disallow: /*?", "/page?id=1", false},
		{"query absent", "Disallow: /*?", "/page", true},
		{"exact dollar", "Disallow: /$", "/", false},
		{"exact dollar other", "Disallow: /$", "/page", true},
		{"two stars", "Disallow: /a*b*c$", "/axxbyyc", false},
		{"two stars unanchored", "Disallow: /a*b*c", "/axxbyycz", false},
		{"two stars missing", "Disallow: /a*b*c", "/axxcyyb", true},
		{"longest wins", "Allow: /p\nDisallow: /", "/page", true},
		{"longest disallow", "Allow: /\nDisallow: /admin", "/admin/x", false},
		{"tie goes to allow", "Allow: /page\nDisallow: /page", "/page", true},
		{"tie goes to allow, star", "Allow: /$\nDisallow: /", "/", true},
		{"escape of unreserved", "Disallow: /a%7Eb", "/a~b", false},
		{"escape case", "Disallow: /a%2fb", "/a%2Fb", false},
		{"non-ascii pattern", "Disallow: /ä", "/%C3%A4", false},
		{"everything", "Disallow: /", "/anything", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := parseRobots([]byte("User-agent: *\n"+tc.rules+"\n"), UserAgent)
			require.Equal(t, tc.want, allowed(t, r, tc.path))
		})
	}
}

func TestRobotsRulesBeforeAnyGroupAreIgnored(t *testing.T) {
	t.Parallel()
	r := parseRobots([]byte("Disallow: /\nUser-agent: *\nDisallow: /x\n"), UserAgent)
	require.True(t, allowed(t, r, "/y"))
	require.False(t, allowed(t, r, "/x"))
}

func TestRobotsAllowAndDisallowAll(t *testing.T) {
	t.Parallel()
	require.True(t, allowed(t, allowAll, "/anything"))
	require.False(t, allowed(t, disallowAll, "/anything"))
	require.True(t, allowed(t, disallowAll, "/robots.txt"))
	var none *robotsRules
	require.True(t, allowed(t, none, "/x"))
}

func TestRobotsTooLargeIsCut(t *testing.T) {
	t.Parallel()
	body := "User-agent: *\nDisallow: /early\n" + strings.Repeat("# filler\n", maxRobotsBytes/9+10) + "Disallow: /late\n"
	r := parseRobots([]byte(body), UserAgent)
	require.False(t, allowed(t, r, "/early"))
	require.True(t, allowed(t, r, "/late"))
}

// robotsServer serves robots.txt with status and body, counting fetches.
func robotsServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		require.Equal(t, robotsAgent, r.Header.Get("User-Agent"))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestFetchRobotsStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		allowX    bool
		allowRoot bool
	}{
		{"200 parsed", 200, "User-agent: *\nDisallow: /x", false, true},
		{"404 allows all", 404, "", true, true},
		{"403 allows all", 403, "", true, true},
		{"500 disallows all", 500, "", false, false},
		{"503 disallows all", 503, "", false, false},
		{"429 disallows all", 429, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := robotsServer(t, tc.status, tc.body)
			r, _, err := fetchRobots(context.Background(), srv.Client(), srv.URL)
			require.NoError(t, err)
			require.Equal(t, tc.allowX, allowed(t, r, "/x"))
			require.Equal(t, tc.allowRoot, allowed(t, r, "/"))
		})
	}
}

func TestFetchRobotsRedirects(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/r/1", http.StatusFound) })
	mux.HandleFunc("/r/1", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/r/2", http.StatusMovedPermanently) })
	mux.HandleFunc("/r/2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/r/3", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/r/3", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("User-agent: *\nDisallow: /x\n")) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r, _, err := fetchRobots(context.Background(), srv.Client(), srv.URL)
	require.NoError(t, err)
	require.False(t, allowed(t, r, "/x"), "three redirects are followed")

	// More than five: the file is unavailable, which allows everything.
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
	}))
	t.Cleanup(loop.Close)
	r, _, err = fetchRobots(context.Background(), loop.Client(), loop.URL)
	require.NoError(t, err)
	require.True(t, allowed(t, r, "/x"))
}

func TestFetchRobotsUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	origin := srv.URL
	srv.Close()
	_, _, err := fetchRobots(context.Background(), http.DefaultClient, origin)
	require.ErrorIs(t, err, errRobotsUnreachable)
}

func TestRobotsCache(t *testing.T) {
	t.Parallel()
	srv, n := robotsServer(t, 200, "User-agent: *\nDisallow: /x")
	clock := newFakeClock()
	c := newRobotsCache(time.Hour, clock.Now)
	ctx := context.Background()
	for range 3 {
		r, err := c.get(ctx, srv.Client(), srv.URL)
		require.NoError(t, err)
		require.False(t, allowed(t, r, "/x"))
	}
	require.EqualValues(t, 1, n.Load(), "fetched once per TTL")
	clock.advance(time.Hour)
	_, err := c.get(ctx, srv.Client(), srv.URL)
	require.NoError(t, err)
	require.EqualValues(t, 2, n.Load(), "fetched again when stale")

	// A server error is kept for a minute only.
	bad, nb := robotsServer(t, 503, "")
	for range 2 {
		r, err := c.get(ctx, bad.Client(), bad.URL)
		require.NoError(t, err)
		require.False(t, allowed(t, r, "/"))
	}
	require.EqualValues(t, 1, nb.Load())
	clock.advance(robotsErrorTTL)
	_, _ = c.get(ctx, bad.Client(), bad.URL)
	require.EqualValues(t, 2, nb.Load())

	// A network error is not cached.
	gone := httptest.NewServer(http.NotFoundHandler())
	origin := gone.URL
	gone.Close()
	for range 2 {
		_, err := c.get(ctx, http.DefaultClient, origin)
		require.ErrorIs(t, err, errRobotsUnreachable)
	}
	c.mu.Lock()
	_, cached := c.entries[origin]
	c.mu.Unlock()
	require.False(t, cached)
}

func TestRobotsCacheSharesOneFetch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		<-release
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /x"))
	}))
	t.Cleanup(srv.Close)
	c := newRobotsCache(time.Hour, time.Now)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := c.get(context.Background(), srv.Client(), srv.URL)
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return n.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	close(release)
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, 1, n.Load())

	// A waiter whose ctx ends stops waiting.
	c2 := newRobotsCache(time.Hour, time.Now)
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(slow.Close)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		_, _ = c2.get(context.Background(), slow.Client(), slow.URL)
	}()
	require.Eventually(t, func() bool { c2.mu.Lock(); defer c2.mu.Unlock(); return len(c2.entries) == 1 }, 10*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c2.get(ctx, slow.Client(), slow.URL)
	require.ErrorIs(t, err, context.Canceled)
	close(block)
	<-fetched
}
