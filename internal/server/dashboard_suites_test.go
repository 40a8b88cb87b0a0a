package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-rod/rod"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// gatedShop serves a shop whose front page (/gated) answers only once the
// test calls release, so the test can look at a suite run whose tests are
// running; its /hang page never answers.
func gatedShop(t *testing.T) (site *httptest.Server, release func()) {
	gate := make(chan struct{})
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/gated", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Shop</title><h1>Welcome to the shop</h1><a href="/cart">Cart</a>`)
	})
	mux.HandleFunc("/cart", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Cart</title><p>Your cart is empty</p>`)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	site = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(done)
		site.CloseClientConnections()
		site.Close()
	})
	var once sync.Once
	return site, func() { once.Do(func() { close(gate) }) }
}

// dashboardSuiteFile has a test that passes and one whose url_pattern
// oracle fails; the failing oracle's name is markup that must show as text.
const dashboardSuiteFile = `suite: dash
concurrency: 2
tags: [smoke]
tests:
  - name: cart-ok
    run:
      goal: Click Cart. Expect text Your cart is empty
      start_url: {{.Site}}/gated
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - url_pattern: /cart$
  - name: wrong-page
    run:
      goal: Expect text Welcome
      start_url: {{.Site}}/gated
      allowed_domains: [127.0.0.1]
    oracles:
      - name: '{{.Oracle}}'
        url_pattern: /cart$
`

// pwnOracle is the failing oracle's name.
const pwnOracle = `on the <b>cart</b> <img src=x id=pwn onerror="window.__pwned=1">`

// TestDashboardSuiteRuns drives the suite pages in Chromium: the history
// lists a suite run, its page follows both tests to PASSED and FAILED as
// they end, the failing test's attempt shows its oracles, run and final
// screenshot; an unknown suite run says so; without the watch stream the
// page polls, and its Cancel button stops a suite run.
func TestDashboardSuiteRuns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	tests := wfv1.NewTestServiceClient(ts.conn)
	site, release := gatedShop(t)
	t.Cleanup(release)

	file := strings.NewReplacer("{{.Site}}", site.URL, "{{.Oracle}}", pwnOracle).Replace(dashboardSuiteFile)
	body, err := json.Marshal(map[string]string{"yaml": file})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/suites:import", string(body), nil))
	var sr struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/suites/dash:run", `{}`, &sr))
	require.NotEmpty(t, sr.ID)

	// The header leads to the history, which lists the suite run.
	page := openDashboard(t, base+"/ui/")
	page.click(`nav.sections a[data-section="suites"]`)
	row := `tr[data-suite-run-id="` + sr.ID + `"]`
	page.el(row)
	require.Equal(t, "dash", page.text(row+` a.suite-name`))
	require.Equal(t, "true", page.eval(`() => document.querySelector('nav.sections a[data-section="suites"]').getAttribute('aria-current')`))
	page.shot("suite-runs-running")

	// Its page, while both tests wait for the shop.
	page.click(row + ` a.suite-name`)
	view := `section.suite-run[data-suite-run-id="` + sr.ID + `"]`
	page.waitText(view+` .suite-run-header h1.suite-name`, "dash")
	page.el(view + ` li.test-result[data-test="cart-ok"][data-outcome="TEST_OUTCOME_RUNNING"]`)
	page.el(view + ` li.test-result[data-test="wrong-page"][data-outcome="TEST_OUTCOME_RUNNING"]`)
	page.el(view + ` .suite-run-header button.cancel:not([hidden])`)
	require.Equal(t, "live", page.text(view+` .feed`), "the page follows the watch stream")
	page.eval(`() => { document.querySelector('section.suite-run').dataset.mark = 'before' }`)

	// The tests end; the page follows without being reloaded.
	release()
	page.el(view + ` li.test-result[data-test="cart-ok"][data-outcome="TEST_OUTCOME_PASSED"]`)
	page.el(view + ` li.test-result[data-test="wrong-page"][data-outcome="TEST_OUTCOME_FAILED"]`)
	page.el(view + ` .suite-run-header .status[data-status="SUITE_RUN_STATUS_FAILED"]`)
	require.Equal(t, "before", page.eval(`() => document.querySelector('section.suite-run').dataset.mark`))
	require.False(t, page.has(view+` .suite-run-header button.cancel:not([hidden])`), "an ended suite run cannot be cancelled")
	require.Equal(t, "1 passed", page.text(view+` .suite-run-header .count[data-count="passed"]`))
	require.Equal(t, "1 failed", page.text(view+` .suite-run-header .count[data-count="failed"]`))
	require.Contains(t, page.text(view+` li.test-result[data-test="wrong-page"] .test-score`), "score 0.00 of 1.00")

	// The failing test's attempt: its oracle says why, with its run and
	// final screenshot as evidence.
	final, err := tests.GetSuiteRun(context.Background(), &wfv1.GetSuiteRunRequest{Id: sr.ID})
	require.NoError(t, err)
	require.Len(t, final.Results, 2)
	attempt := final.Results[1].Attempts[0]
	logRunOnFailure(t, ts, attempt.RunId)
	failing := view + ` li.test-result[data-test="wrong-page"]`
	page.click(failing + ` details.attempts > summary`)
	card := failing + ` .attempt[data-attempt="1"][data-passed="false"]`
	page.el(card)
	require.Equal(t, pwnOracle, page.text(card+` tr[data-passed="false"] .oracle-name`))
	require.Equal(t, "url_pattern", page.text(card+` tr[data-passed="false"] .oracle-kind`))
	require.Equal(t, "no", page.text(card+` tr[data-passed="false"] .oracle-passed`))
	require.Contains(t, page.text(card+` tr[data-passed="false"] .oracle-detail`), "/gated")
	require.Equal(t, "#/runs/"+attempt.RunId, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, card+` a.run-link`))
	require.Equal(t, site.URL+"/gated", page.text(card+` .final-url`))
	page.waitJS(`sel => { const i = document.querySelector(sel); return i && i.complete && i.naturalWidth > 0 }`, card+` .thumb img`)
	page.shot("suite-run-failed")

	// The attempt's run opens from its link.
	page.click(card + ` a.run-link`)
	page.el(`section.run[data-run-id="` + attempt.RunId + `"] .run-header .status[data-status="` + attempt.RunStatus.String() + `"]`)

	// The history shows the end, and filters by suite.
	page.click(`nav.sections a[data-section="suites"]`)
	page.el(row + `[data-status="SUITE_RUN_STATUS_FAILED"]`)
	require.Equal(t, "1 failed", page.text(row+` .count[data-count="failed"]`))
	page.input(`.suite-filter input`, "other")
	page.click(`.suite-filter button`)
	page.waitJS(`() => location.hash === '#/suite-runs?suite=other' && document.querySelector('.suite-runs .empty:not([hidden])') !== null`)
	require.False(t, page.has(row))
	page.eval(`() => { location.hash = '#/suite-runs?suite=dash' }`)
	page.el(row)

	// An unknown suite run says so.
	for _, id := range []string{uuid.NewString(), "not-a-suite-run"} {
		page.eval(`id => { location.hash = '#/suite-runs/' + id }`, id)
		page.waitText(`section.suite-run[data-suite-run-id="`+id+`"] .message`, "There is no such suite run.")
		require.False(t, page.has(`section.suite-run .suite-run-header:not([hidden])`))
	}

	// Without the watch stream the page polls; Cancel stops the suite run.
	slow := `suite: dash-slow
tests:
  - name: hangs
    run:
      goal: Expect text Welcome
      start_url: ` + site.URL + `/hang
      allowed_domains: [127.0.0.1]
`
	body, err = json.Marshal(map[string]string{"yaml": slow})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/suites:import", string(body), nil))
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/suites/dash-slow:run", `{}`, &sr))
	router := page.p.HijackRequests()
	require.NoError(t, router.Add("*/v1/suite-runs/*:watch*", "", func(h *rod.Hijack) {
		h.Response.Payload().ResponseCode = http.StatusServiceUnavailable
		h.Response.SetHeader("Content-Type", "application/json").SetBody(`{"code": 14, "message": "unavailable"}`)
	}))
	go router.Run()
	t.Cleanup(func() { _ = router.Stop() })
	page.eval(`id => { location.hash = '#/suite-runs/' + id }`, sr.ID)
	view = `section.suite-run[data-suite-run-id="` + sr.ID + `"]`
	page.waitText(view+` .feed`, "updating every 2 s")
	page.click(view + ` .suite-run-header button.cancel`)
	page.el(view + ` .suite-run-header .status[data-status="SUITE_RUN_STATUS_CANCELLED"]`)
	require.False(t, page.has(view+` .suite-run-header button.cancel:not([hidden])`))

	// Untrusted text stayed text: the oracle's name made no element and ran
	// no script.
	require.Equal(t, false, page.eval(`() => window.__pwned !== undefined || document.getElementById('pwn') !== null`))
	page.noErrors()
}
