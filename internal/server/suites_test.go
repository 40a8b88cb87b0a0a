package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/suite"
)

// shopSite serves the pages the suite tests visit: a shop with a product
// table, a cart, a page that is down on its first visit, and one that
// never finishes loading.
func shopSite(t *testing.T) *httptest.Server {
	var flakyHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/shop", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Shop</title><h1>Welcome to the shop</h1>
<table id="products"><tr><td>Apple</td><td>1.50</td></tr><tr><td>Pear</td><td>2.00</td></tr></table>
<a href="/cart">Cart</a>`)
	})
	mux.HandleFunc("/cart", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Cart</title><p>Your cart is empty</p><button class="checkout">Checkout</button>`)
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if flakyHits.Add(1) == 1 {
			fmt.Fprint(w, `<!doctype html><title>Status</title><p>Down for maintenance</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Status</title><p>All systems ready</p>`)
	})
	done := make(chan struct{})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select { // never answers while the test runs
		case <-done:
		case <-r.Context().Done():
		}
	})
	s := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(done)
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// suiteFile is the suite the end-to-end test imports: every oracle kind,
// passing and failing, a flaky test, a test that times out, and tests run
// by the offline controller and by a model.
const suiteFile = `suite: shop
description: The shop's smoke tests
concurrency: 2
default_timeout: 2m
tags: [smoke]
tests:
  - name: browse-cart
    tags: [cart]
    run:
      goal: Click Cart. Expect text Your cart is empty
      start_url: {{.Site}}/shop
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - url_pattern: /cart$
      - text_present: cart is EMPTY
      - element_present: button.checkout
  - name: wrong-page
    run:
      goal: Expect text Welcome
      start_url: {{.Site}}/shop
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - name: on the cart
        url_pattern: /cart$
      - text_present: Order complete
      - element_present: "#receipt"
  - name: status-page
    tags: [flaky]
    retries: 1
    run:
      goal: Expect text All systems ready
      start_url: {{.Site}}/flaky
      allowed_domains: [127.0.0.1]
  - name: product-data
    pass_threshold: 0.75
    run:
      goal: Read the products
      start_url: {{.Site}}/shop
      allowed_domains: [127.0.0.1]
      controller: {provider: openai, model: test-model, base_url: "{{.Model}}"}
      judge: {strategy: JUDGE_STRATEGY_LLM}
    oracles:
      - goal: {}
      - name: rows
        data_schema:
          type: array
          minItems: 2
          items: {type: object, required: [name, price]}
      - name: skus
        weight: 0.5
        data_schema: {type: array, items: {required: [sku]}}
      - rubric: {rubric: "GOOD RUBRIC: lists both products with prices"}
  - name: graded-low
    run:
      goal: Expect text Welcome
      start_url: {{.Site}}/shop
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - rubric:
          rubric: "LOW RUBRIC: shows an order confirmation"
          model: {provider: openai, model: grader, base_url: "{{.Model}}"}
  - name: too-slow
    timeout: 10s
    run:
      goal: Expect text Welcome
      start_url: {{.Site}}/hang
      allowed_domains: [127.0.0.1]
`

// TestSuiteRun imports a suite file, runs it, and checks every test's
// outcome, every oracle's verdict and the evidence, the history and the
// JUnit report.
func TestSuiteRun(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	tests := wfv1.NewTestServiceClient(ts.conn)
	ctx := context.Background()
	site := shopSite(t)

	var (
		mu      sync.Mutex
		graders []llmtest.Call
	)
	model := llmtest.NewOpenAI(t, func(c llmtest.Call) llmtest.Reply {
		switch {
		case slices.Contains(c.Tools, "submit_verdict"):
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("submit_verdict",
				map[string]any{"done": true, "failed": false, "confidence": 0.9, "reason": "the products were read"})}}
		case slices.Contains(c.Tools, "submit_grade"):
			mu.Lock()
			graders = append(graders, c)
			mu.Unlock()
			score := 0.2
			if strings.Contains(lastUserText(c), "GOOD RUBRIC") {
				score = 0.9
			}
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("submit_grade",
				map[string]any{"score": score, "reason": fmt.Sprintf("graded %.1f", score)})}}
		}
		// The controller: read the table, then finish.
		if !hasToolResult(c, "browser_extract") {
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("browser_extract", map[string]any{
				"rows": "#products tr", "fields": map[string]any{"name": "td:nth-child(1)", "price": "td:nth-child(2)"}})}}
		}
		return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task",
			map[string]any{"status": "success", "reason": "two products read"})}}
	})

	file := strings.NewReplacer("{{.Site}}", site.URL, "{{.Model}}", model.URL).Replace(suiteFile)
	imported, err := tests.ImportSuite(ctx, &wfv1.ImportSuiteRequest{Yaml: file})
	require.NoError(t, err)
	require.Len(t, imported.Tests, 6)

	sr, err := tests.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", RequestId: "ci-1"})
	require.NoError(t, err)
	again, err := tests.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "shop", RequestId: "ci-1"})
	require.NoError(t, err)
	require.Equal(t, sr.Id, again.Id, "the request ID makes StartSuiteRun idempotent")

	final := watchSuiteRun(t, tests, sr.Id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, final.Status, final.Error)
	results := map[string]*wfv1.TestResult{}
	for _, r := range final.Results {
		results[r.Test] = r
	}
	require.Len(t, results, 6)
	oracles := func(a *wfv1.TestAttempt) map[string]*wfv1.OracleResult {
		m := map[string]*wfv1.OracleResult{}
		for _, o := range a.Oracles {
			m[o.Name] = o
		}
		return m
	}

	// Every oracle kind passes on the cart.
	r := results["browse-cart"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, r.Outcome, r.Message)
	require.Len(t, r.Attempts, 1)
	a := r.Attempts[0]
	require.True(t, a.Passed)
	require.InDelta(t, 1, a.Score, 1e-9)
	require.Len(t, a.Oracles, 4)
	for _, o := range a.Oracles {
		require.True(t, o.Passed, "%s: %s", o.Name, o.Detail)
	}
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, a.RunStatus)
	require.True(t, strings.HasSuffix(a.FinalUrl, "/cart"), a.FinalUrl)
	require.NotEmpty(t, a.FinalScreenshotMediaId, "the final screenshot is the evidence")
	media, err := ts.client.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: a.FinalScreenshotMediaId})
	require.NoError(t, err)
	require.NotEmpty(t, media.Data)
	run, err := ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: a.RunId})
	require.NoError(t, err)
	require.Equal(t, a.StepCount, run.StepCount)

	// The run met its goal, but the final-page oracles fail, each saying why.
	r = results["wrong-page"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	a = r.Attempts[0]
	require.False(t, a.Passed)
	byName := oracles(a)
	require.True(t, byName["goal"].Passed, byName["goal"].Detail)
	for _, name := range []string{"on the cart", "text_present", "element_present"} {
		require.Contains(t, byName, name)
		require.False(t, byName[name].Passed, name)
		require.NotEmpty(t, byName[name].Detail, name)
	}
	require.Contains(t, byName["on the cart"].Detail, "/shop")
	require.InDelta(t, 0.25, a.Score, 1e-9)
	require.NotEmpty(t, a.Message)

	// Down on the first visit, up on the retry: flaky.
	r = results["status-page"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, r.Outcome, r.Message)
	require.Len(t, r.Attempts, 2)
	require.False(t, r.Attempts[0].Passed)
	require.True(t, r.Attempts[1].Passed)
	require.NotEqual(t, r.Attempts[0].RunId, r.Attempts[1].RunId)

	// A model read the table: the rows are the run's output; one schema
	// holds, the other (weight 0.5) does not, and the score (3.5/4) clears
	// the threshold; the rubric graded it 0.9.
	r = results["product-data"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, r.Outcome, r.Message)
	a = r.Attempts[0]
	byName = oracles(a)
	require.True(t, byName["rows"].Passed, byName["rows"].Detail)
	require.False(t, byName["skus"].Passed)
	require.True(t, byName["rubric"].Passed, byName["rubric"].Detail)
	require.InDelta(t, 0.9, byName["rubric"].Score, 1e-9)
	require.InDelta(t, (1+1+0.5*0+0.9)/3.5, a.Score, 1e-9)
	run, err = ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: a.RunId})
	require.NoError(t, err)
	require.Len(t, run.Output.GetListValue().GetValues(), 2)

	// The grader is the oracle's model, shown the screenshot.
	r = results["graded-low"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	byName = oracles(r.Attempts[0])
	require.True(t, byName["goal"].Passed)
	require.False(t, byName["rubric"].Passed)
	require.InDelta(t, 0.2, byName["rubric"].Score, 1e-9)
	mu.Lock()
	require.Len(t, graders, 2)
	var low llmtest.Call
	for _, g := range graders {
		if strings.Contains(lastUserText(g), "LOW RUBRIC") {
			low = g
		}
	}
	mu.Unlock()
	require.Equal(t, "grader", low.Model)
	require.True(t, hasImage(low), "the grader sees the final screenshot")

	// The timeout stops the run cleanly and fails the test.
	r = results["too-slow"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	a = r.Attempts[0]
	require.True(t, a.TimedOut, a.Message)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, a.RunStatus)

	require.Equal(t, &wfv1.SuiteRunSummary{Total: 6, Passed: 2, Failed: 3, Flaky: 1}, final.Summary)

	// The history lists it; the report is valid JUnit.
	hist, err := tests.ListSuiteRuns(ctx, &wfv1.ListSuiteRunsRequest{Suite: "shop"})
	require.NoError(t, err)
	require.Len(t, hist.SuiteRuns, 1)
	require.Equal(t, sr.Id, hist.SuiteRuns[0].Id)
	require.Equal(t, final.Summary, hist.SuiteRuns[0].Summary)
	junit, err := suite.JUnit(final)
	require.NoError(t, err)
	validateJUnit(t, junit)

	// Over REST: the suite run, and the suite exported and imported back.
	base := "http://" + ts.addrs.HTTP
	var got struct {
		Status  string         `json:"status"`
		Summary map[string]int `json:"summary"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/suite-runs/"+sr.Id, "", &got))
	require.Equal(t, "SUITE_RUN_STATUS_FAILED", got.Status)
	require.Equal(t, 1, got.Summary["flaky"])
	var exported struct {
		YAML string `json:"yaml"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/suites/shop:export", "", &exported))
	body, err := json.Marshal(map[string]string{"yaml": exported.YAML})
	require.NoError(t, err)
	var reimported struct {
		Tests []struct {
			Name string `json:"name"`
		} `json:"tests"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/suites:import", string(body), &reimported))
	require.Len(t, reimported.Tests, 6)
	for i, test := range imported.Tests {
		again, err := tests.GetTest(ctx, &wfv1.GetTestRequest{Name: test.Name})
		require.NoError(t, err)
		require.Equal(t, test.Name, reimported.Tests[i].Name)
		test.UpdateTime, again.UpdateTime = nil, nil
		require.True(t, proto.Equal(test, again), "%s changed in the export round trip:\n%v\n%v", test.Name, test, again)
	}
	var bad struct {
		Message string `json:"message"`
	}
	require.Equal(t, http.StatusBadRequest, restJSON(t, http.MethodPost, base+"/v1/suites:import", `{"yaml": "suite: x\ntests:\n  - name: a\n    retires: 2\n"}`, &bad))
	require.Contains(t, bad.Message, "retires")
}

// TestSuiteRunCancel: cancelling a suite run stops its running test's run
// and skips the tests not started.
func TestSuiteRunCancel(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	tests := wfv1.NewTestServiceClient(ts.conn)
	ctx := context.Background()
	site := shopSite(t)
	file := `suite: slow
concurrency: 1
tests:
`
	for _, name := range []string{"first", "second", "third"} {
		file += fmt.Sprintf(`  - name: %s
    run:
      goal: Expect text Welcome
      start_url: %s/hang
      allowed_domains: [127.0.0.1]
`, name, site.URL)
	}
	_, err := tests.ImportSuite(ctx, &wfv1.ImportSuiteRequest{Yaml: file})
	require.NoError(t, err)
	sr, err := tests.StartSuiteRun(ctx, &wfv1.StartSuiteRunRequest{Suite: "slow"})
	require.NoError(t, err)

	// Wait until the first test's run is running.
	stream, err := tests.WatchSuiteRun(ctx, &wfv1.WatchSuiteRunRequest{Id: sr.Id})
	require.NoError(t, err)
	var runID string
	for runID == "" {
		cur, err := stream.Recv()
		require.NoError(t, err)
		if a := cur.Results[0].Attempts; len(a) > 0 && a[0].RunId != "" {
			runID = a[0].RunId
		}
	}
	waitForEvent(t, ts.client, runID, wfv1.RunEventType_RUN_EVENT_TYPE_STARTED)
	_, err = tests.CancelSuiteRun(ctx, &wfv1.CancelSuiteRunRequest{Id: sr.Id})
	require.NoError(t, err)

	final := watchSuiteRun(t, tests, sr.Id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, final.Status)
	require.True(t, final.CancelRequested)
	run := waitFinished(t, ts.client, runID)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, run.Status)
	for _, r := range final.Results[1:] {
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, r.Outcome, r.Test)
		require.Empty(t, r.Attempts, r.Test)
	}
	require.EqualValues(t, 2, final.Summary.Skipped)
}

// watchSuiteRun follows a suite run until its stream ends and returns the
// last state, which must be final.
func watchSuiteRun(t *testing.T, client wfv1.TestServiceClient, id string) *wfv1.SuiteRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stream, err := client.WatchSuiteRun(ctx, &wfv1.WatchSuiteRunRequest{Id: id})
	require.NoError(t, err)
	var last *wfv1.SuiteRun
	for {
		sr, err := stream.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		last = sr
	}
	require.NotNil(t, last)
	switch last.Status {
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:
	default:
		t.Fatalf("the watch ended with the suite run %s", last.Status)
	}
	return last
}

// validateJUnit checks a report against the JUnit schema with xmllint.
func validateJUnit(t *testing.T, report []byte) {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Fatal("xmllint not found: install libxml2-utils (make deps does)")
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(path, report, 0o600))
	out, err := exec.Command("xmllint", "--noout", "--schema", "../suite/testdata/junit.xsd", path).CombinedOutput()
	require.NoError(t, err, "%s\n%s", out, report)
}

func lastUserText(c llmtest.Call) string {
	var b strings.Builder
	for _, m := range c.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		for _, p := range m.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func hasToolResult(c llmtest.Call, tool string) bool {
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			if p.ToolResult != nil && p.ToolResult.Name == tool {
				return true
			}
		}
	}
	return false
}

func hasImage(c llmtest.Call) bool { return c.ImageCount > 0 }
