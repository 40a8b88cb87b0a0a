package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// hostileSite serves pages that attack the browser: dialog loops, popup
// storms, pages that never load, a huge DOM, a pinned CPU, an endless
// redirect chain and download/gzip bombs. "/" is a normal page.
func hostileSite(t *testing.T) *httptest.Server {
	t.Helper()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%s</title>%s`, title, body)
	}
	var bombOnce sync.Once
	var bomb []byte
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Test page", `<h1>Hello from the test site</h1><button>Go</button>`)
	})
	// Dialogs opened back to back for ever, once the page has loaded.
	mux.HandleFunc("/alerts", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Alerts", `<h1>Alerts</h1><button>Go</button><script>
			addEventListener('load', () => setTimeout(() => { for (let i = 0; ; i++) alert('alert ' + i) }, 0))</script>`)
	})
	mux.HandleFunc("/confirms", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Confirms", `<h1>Confirms</h1><button onclick="for (let i = 0; ; i++) confirm('sure? ' + i)">Go</button>`)
	})
	// Popups opened on every click and on a timer.
	mux.HandleFunc("/popups", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Popups", `<h1>Popups</h1><button onclick="for (let i = 0; i < 500; i++) window.open('/popup?' + i)">Go</button><script>
			let n = 0; setInterval(() => { for (let i = 0; i < 20; i++) window.open('/popup?t' + (n++)) }, 50)</script>`)
	})
	mux.HandleFunc("/popup", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Popup", `<p>popup `+r.URL.RawQuery+`</p><script>window.open('/popup?child')</script>`)
	})
	// A page whose body never ends: the load event never fires.
	mux.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Never</title><h1>Loading for ever</h1><button>Go</button>`)
		rc := http.NewResponseController(w)
		for {
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := fmt.Fprint(w, "<!-- . -->"); err != nil {
				return
			}
		}
	})
	// 100 MB of DOM, built by the page on click: 100,000 paragraphs of
	// 1,000 bytes.
	mux.HandleFunc("/bigdom", func(w http.ResponseWriter, r *http.Request) {
		// Built in slices of 2,000 so the click that starts it returns and
		// the run's snapshots meet the DOM while and after it grows.
		page(w, "Big DOM", `<h1>Big DOM</h1><button onclick="build(0)">Go</button><script>
			const chunk = 'x'.repeat(990) + ' ';
			function build(from) {
				const f = document.createDocumentFragment();
				for (let i = from; i < from + 2000; i++) { const p = document.createElement('p'); p.textContent = chunk + i; f.appendChild(p) }
				document.body.appendChild(f);
				if (from + 2000 < 100000) setTimeout(() => build(from + 2000), 0)
			}</script>`)
	})
	// A renderer that never yields once loaded.
	mux.HandleFunc("/cpu", func(w http.ResponseWriter, r *http.Request) {
		page(w, "CPU", `<h1>Spinning</h1><button>Go</button><script>
			addEventListener('load', () => setTimeout(() => { for (;;) {} }, 200))</script>`)
	})
	// Every hop redirects to the next.
	mux.HandleFunc("/redirect/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		http.Redirect(w, r, "/redirect/"+strconv.Itoa(n+1), http.StatusFound)
	})
	// An attachment that streams until the client goes away (1 GB claimed).
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="bomb.bin"`)
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		buf := make([]byte, 64<<10)
		for sent := 0; sent < 1<<30; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/download-link", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Download", `<h1>Download</h1><a href="/download">Go</a><script>location.href = '/download'</script>`)
	})
	// A page that inflates from 256 KB on the wire to 256 MB.
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		bombOnce.Do(func() {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			fmt.Fprint(zw, `<!doctype html><title>Gzip</title><h1>Gzip</h1><button>Go</button><p>`)
			line := bytes.Repeat([]byte("a"), 1<<20)
			for range 256 {
				_, _ = zw.Write(line)
			}
			_ = zw.Close()
			bomb = b.Bytes()
		})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}

// hostileCase is one hostile page and how a run on it may end.
type hostileCase struct {
	name string
	path string
	// categories the run may end with when it ends ERROR; a FAILED run
	// (the goal was not met within max steps) has none.
	categories []wfv1.ErrorCategory
	// dialogsCapped: some action reported MaxDialogsPerAction dialogs and
	// counted more as omitted.
	dialogsCapped bool
}

var (
	navTimeout = wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_TIMEOUT
	runTimeout = wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT
	navError   = wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_ERROR
	crashed    = wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH
)

// TestHostileScripts runs the offline controller on pages whose scripts
// attack the browser: dialog loops, a window.open storm, a pinned CPU.
// (Chromium's popup blocker lets a page open one popup per user gesture,
// so the storm opens one tab per click; TestCaps in internal/browser
// clicks past MaxTabs.)
func TestHostileScripts(t *testing.T) {
	t.Parallel()
	runHostile(t, []hostileCase{
		{"alert loop", "/alerts", []wfv1.ErrorCategory{navTimeout, runTimeout}, false},
		{"confirm loop", "/confirms", []wfv1.ErrorCategory{runTimeout}, true},
		{"window.open storm", "/popups", []wfv1.ErrorCategory{runTimeout}, false},
		{"pinned CPU", "/cpu", []wfv1.ErrorCategory{runTimeout, crashed}, false},
	})
}

// TestHostileLoads runs the offline controller on pages that attack the
// browser's loading: a load that never ends, a 100 MB DOM, an endless
// redirect chain, a download bomb and a gzip bomb.
func TestHostileLoads(t *testing.T) {
	t.Parallel()
	runHostile(t, []hostileCase{
		{"never finishes loading", "/never", []wfv1.ErrorCategory{navTimeout}, false},
		{"100 MB DOM", "/bigdom", []wfv1.ErrorCategory{navTimeout, runTimeout}, false},
		{"endless redirects", "/redirect/0", []wfv1.ErrorCategory{navError}, false},
		{"download bomb", "/download-link", []wfv1.ErrorCategory{navError}, false},
		{"gzip bomb", "/gzip", []wfv1.ErrorCategory{navTimeout, runTimeout}, false},
	})
}

// runHostile runs each case through one real server. Each run ends within
// the limits its params set (max steps, navigation, action and run
// timeouts), FAILED or ERROR with one of the case's categories; what it
// recorded stays within the browser's caps (dialogs per action, tabs); and
// the same server then completes a normal run.
func runHostile(t *testing.T, cases []hostileCase) {
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	site := hostileSite(t)
	ctx := context.Background()
	const maxSteps = 3
	limited := func(path string) *wfv1.RunParams {
		p := params(site.URL + path)
		p.Goal = "Click Go. Expect text Something that never appears"
		p.MaxSteps = maxSteps
		p.Browser = &wfv1.BrowserConfig{
			NavigationTimeout: durationpb.New(5 * time.Second),
			ActionTimeout:     durationpb.New(5 * time.Second),
			RunTimeout:        durationpb.New(20 * time.Second),
		}
		return p
	}
	ended := []wfv1.RunStatus{wfv1.RunStatus_RUN_STATUS_FAILED, wfv1.RunStatus_RUN_STATUS_ERROR}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: limited(tc.path)})
			require.NoError(t, err)
			final := waitFinished(t, ts.client, run.Id)
			steps := describeSteps(t, ts.client, run.Id)
			t.Logf("%s: %v %v %q after %d steps\n%s", tc.name, final.Status, final.GetError().GetCategory(), final.GetError().GetMessage(), final.StepCount, steps)
			require.Contains(t, ended, final.Status)
			if final.Status == wfv1.RunStatus_RUN_STATUS_ERROR {
				require.Contains(t, tc.categories, final.GetError().GetCategory(), final.GetError().GetMessage())
			}
			require.LessOrEqual(t, final.StepCount, int32(maxSteps))
			require.Equal(t, tc.dialogsCapped, requireWithinCaps(t, ts, run.Id), "dialogs capped")

			// The same server still completes a normal run.
			normal, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(site.URL + "/")})
			require.NoError(t, err)
			done := waitFinished(t, ts.client, normal.Id)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, done.Status, "%v\n%s", done.GetError(), describeSteps(t, ts.client, normal.Id))
		})
	}
}

// requireWithinCaps checks what the run recorded against the browser's
// caps: dialogs reported per action and tabs listed. It returns whether
// the dialog cap was reached (dialogs were omitted).
func requireWithinCaps(t *testing.T, ts *testServer, runID string) (dialogsCapped bool) {
	t.Helper()
	steps, err := ts.client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: runID})
	require.NoError(t, err)
	for _, s := range steps.Steps {
		for _, a := range s.Actions {
			res := a.GetResult().AsMap()
			if d, ok := res["dialogs"].([]any); ok {
				require.LessOrEqual(t, len(d), browser.MaxDialogsPerAction, "step %d dialogs", s.Number)
				for _, ev := range d {
					if n, _ := ev.(map[string]any)["omitted"].(float64); n > 0 {
						dialogsCapped = true
					}
				}
			}
			if tabs, ok := res["tabs"].([]any); ok {
				require.LessOrEqual(t, len(tabs), browser.MaxTabs, "step %d tabs", s.Number)
			}
			require.LessOrEqual(t, len(a.Message), 64<<10, "step %d message", s.Number)
		}
	}
	return dialogsCapped
}
