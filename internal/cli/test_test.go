package cli_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// shop is the web site the suites visit: a home page, a cart, a status
// page that is down on its first visit and a slow page that reports when
// the browser reaches it.
type shop struct {
	*httptest.Server
	statusHits atomic.Int32
	reached    chan struct{} // closed at the first request for /slow
	once       sync.Once
}

func newShop(t *testing.T) *shop {
	s := &shop{reached: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Shop</title><h1>Hello from the test site</h1><a href="/cart">Cart</a>`)
	})
	mux.HandleFunc("/cart", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Cart</title><p>Your cart is empty</p><button class="checkout">Checkout</button>`)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		if s.statusHits.Add(1) == 1 {
			fmt.Fprint(w, `<!doctype html><title>Status</title><p>Down for maintenance</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Status</title><p>All systems ready</p>`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.once.Do(func() { close(s.reached) })
		fmt.Fprint(w, `<!doctype html><title>Slow</title><p>Hello from the slow page</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// suiteFile writes a suite file for the shop and returns its path.
func (s *shop) suiteFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(yaml, "{{site}}", s.URL)), 0o600))
	return path
}

const passingSuite = `suite: cli-pass
description: Tests the CLI runs and that pass
concurrency: 2
default_timeout: 50s
tags: [smoke]
tests:
  - name: home
    tags: [fast]
    run:
      goal: Expect text Hello from the test site
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - url_pattern: /$
      - text_present: hello from the TEST site
  - name: to-cart
    run:
      goal: Click Cart. Expect text Your cart is empty
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
    oracles:
      - url_pattern: /cart$
      - name: checkout-button
        element_present: button.checkout
  - name: status
    retries: 1
    run:
      goal: Expect text All systems ready
      start_url: {{site}}/status
      allowed_domains: [127.0.0.1]
`

// failingSuite's test names differ from passingSuite's: tests are the
// tenant's, and an import replaces the tests of the same names.
const failingSuite = `suite: cli-fail
default_timeout: 50s
tests:
  - name: front-page
    run:
      goal: Expect text Hello from the test site
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
  - name: checkout
    run:
      goal: Expect text Hello from the test site
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
    oracles:
      - goal: {}
      - url_pattern: /done$
`

// TestSuiteCommands runs suites through `wayfinder test` against one
// server, with the offline step controller and pages on 127.0.0.1.
func TestSuiteCommands(t *testing.T) {
	addr := startServer(t, "")
	c := newClient(addr)

	t.Run("Passing", func(t *testing.T) {
		t.Parallel()
		s := newShop(t)
		dir := t.TempDir()
		junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
		r := c.run(t, "test", "run", s.suiteFile(t, passingSuite), "--junit", junit, "--json-report", report)
		require.Equal(t, 0, r.code, r)
		require.Empty(t, r.stdout, r)
		lines := lineStarting(t, r.stderr)
		require.Contains(t, r.stderr, "imported suite cli-pass (3 tests)", r)
		require.Regexp(t, `^✓ home\s+passed 1\.00\s+\S+\s+run [0-9a-f-]{36}$`, lines["✓ home"], r)
		require.Regexp(t, `^✓ to-cart\s+passed 1\.00\s`, lines["✓ to-cart"], r)
		require.Regexp(t, `^↻ status\s+attempt 1 failed \(0\.00\): .+; retrying \(attempt 2\)\s+run [0-9a-f-]{36}$`, lines["↻ status"], r)
		require.Regexp(t, `^~ status\s+flaky 1\.00\s.*\(2 attempts\)`, lines["~ status"], r)
		require.Regexp(t, `\nPASSED in \S+ · 3 tests: 2 passed, 1 flaky · suite run [0-9a-f-]{36}\n`, r.stderr, r)
		require.NotContains(t, r.stderr, "\x1b[", "plain lines when stderr is not a terminal")
		require.Contains(t, r.stderr, "JUnit report: "+junit, r)

		cases := junitCases(t, junit)
		require.ElementsMatch(t, []string{"home", "to-cart", "status"}, keys(cases))
		for name, failed := range cases {
			require.False(t, failed, name)
		}
		// The JSON report is the final suite run.
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		rep := &wfv1.SuiteRun{}
		require.NoError(t, protojson.Unmarshal(b, rep), "%s", b)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, rep.GetStatus())
		require.Len(t, rep.GetResults(), 3)

		// The history and the stored suites show it.
		id := suiteRunID(t, r.stderr)
		r = c.run(t, "test", "runs", "--suite", "cli-pass")
		require.Equal(t, 0, r.code, r)
		require.Regexp(t, id+`\s+cli-pass\s+PASSED\s+.*3 tests: 2 passed, 1 flaky`, r.stdout, r)
		r = c.run(t, "test", "list")
		require.Equal(t, 0, r.code, r)
		require.Regexp(t, `cli-pass\s+3\s+smoke\s+Tests the CLI runs and that pass`, r.stdout, r)
		r = c.run(t, "test", "get", id)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "~ status", r)
		require.Contains(t, r.stdout, "PASSED in ", r)

		// Export round trip: the exported file imports to the same suite
		// and runs; with --json, stdout is the final suite run.
		r = c.run(t, "test", "export", "cli-pass")
		require.Equal(t, 0, r.code, r)
		exported := r.stdout
		require.Contains(t, exported, "suite: cli-pass", r)
		file := filepath.Join(t.TempDir(), "exported.yaml")
		r = c.run(t, "test", "export", "cli-pass", "-o", file)
		require.Equal(t, 0, r.code, r)
		b, err = os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, exported, string(b))
		r = c.run(t, "test", "run", file, "--tags", "fast", "--json")
		require.Equal(t, 0, r.code, r)
		sr := &wfv1.SuiteRun{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), sr), r)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.GetStatus())
		require.Equal(t, []string{"fast"}, sr.GetTags())
		require.Len(t, sr.GetResults(), 1, "the tag filter keeps one test")
		require.Equal(t, "home", sr.GetResults()[0].GetTest())
		r = c.run(t, "test", "export", "cli-pass")
		require.Equal(t, 0, r.code, r)
		require.Equal(t, exported, r.stdout, "a re-imported export exports the same")

		// A stored suite runs without a file; the request ID makes the
		// command idempotent.
		r = c.run(t, "test", "run", "--suite", "cli-pass", "--tags", "fast", "--request-id", "ci-job-7", "--json")
		require.Equal(t, 0, r.code, r)
		first := &wfv1.SuiteRun{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), first), r)
		r = c.run(t, "test", "run", "--no-import", file, "--tags", "fast", "--request-id", "ci-job-7", "--json")
		require.Equal(t, 0, r.code, r)
		again := &wfv1.SuiteRun{}
		require.NoError(t, protojson.Unmarshal([]byte(r.stdout), again), r)
		require.Equal(t, first.GetId(), again.GetId())
		require.NotContains(t, r.stderr, "imported", r)
	})

	t.Run("Failing", func(t *testing.T) {
		t.Parallel()
		s := newShop(t)
		junit := filepath.Join(t.TempDir(), "junit.xml")
		r := c.run(t, "test", "run", s.suiteFile(t, failingSuite), "--junit", junit)
		require.Equal(t, 1, r.code, r)
		lines := lineStarting(t, r.stderr)
		require.Regexp(t, `^✓ front-page\s+passed`, lines["✓ front-page"], r)
		// The failing oracle, with its evidence: the final URL.
		require.Regexp(t, `^✗ checkout\s+failed 0\.50\s.*run [0-9a-f-]{36}: url_pattern: the final URL "`+s.URL+`/" does not match "/done\$"$`, lines["✗ checkout"], r)
		require.Contains(t, r.stderr, "\nFAILED in ", r)
		require.Contains(t, r.stderr, "2 tests: 1 passed, 1 failed", r)
		cases := junitCases(t, junit)
		require.Equal(t, map[string]bool{"front-page": false, "checkout": true}, cases)
	})

	t.Run("Interrupted", func(t *testing.T) {
		t.Parallel()
		s := newShop(t)
		file := s.suiteFile(t, `suite: cli-slow
concurrency: 1
default_timeout: 50s
tests:
  - name: slow
    run:
      goal: Wait 90 seconds. Expect text Hello
      start_url: {{site}}/slow
      allowed_domains: [127.0.0.1]
  - name: never
    run:
      goal: Expect text Hello
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
`)
		junit := filepath.Join(t.TempDir(), "junit.xml")
		bg := c.start(t, "test", "run", file, "--json", "--junit", junit)
		<-s.reached
		bg.cancel() // Ctrl-C
		code, out := bg.wait(t)
		stderr := bg.stderr.String()
		require.Equal(t, 4, code, stderr)
		require.Contains(t, stderr, "interrupted: cancelling suite run", stderr)
		require.Contains(t, stderr, "\nCANCELLED in ", stderr)
		sr := &wfv1.SuiteRun{}
		require.NoError(t, protojson.Unmarshal([]byte(strings.Join(out, "\n")), sr), stderr)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, sr.GetStatus())
		require.True(t, sr.GetCancelRequested())
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, sr.GetResults()[1].GetOutcome())
		require.Regexp(t, `(?m)^- never\s+skipped`, stderr)
		require.Contains(t, junitCases(t, junit), "never", "the report is written for a cancelled suite run too")
	})

	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		s := newShop(t)
		bad := s.suiteFile(t, `suite: cli-bad
tests:
  - name: too-many-retries
    retries: 9
    run:
      goal: Expect text Hello
      start_url: {{site}}/
      allowed_domains: [127.0.0.1]
`)
		unknownKey := s.suiteFile(t, `suite: cli-bad
tests:
  - name: typo
    retires: 1
    run:
      goal: Expect text Hello
      start_url: {{site}}/
`)
		good := s.suiteFile(t, passingSuite)
		tests := []struct {
			name string
			args []string
			want []string // in stderr
		}{
			{"server validation", []string{"test", "run", bad}, []string{"InvalidArgument", "retries"}},
			{"unknown key", []string{"test", "run", unknownKey}, []string{"InvalidArgument", "retires", "line 4"}},
			{"missing file", []string{"test", "run", filepath.Join(t.TempDir(), "nope.yaml")}, []string{"nope.yaml"}},
			{"no file", []string{"test", "run"}, []string{"missing FILE (or --suite NAME)"}},
			{"file and suite", []string{"test", "run", good, "--suite", "cli-pass"}, []string{"exclude each other"}},
			{"report directory missing", []string{"test", "run", good, "--junit", "/nonexistent/dir/junit.xml"}, []string{"--junit", "does not exist"}},
			{"unknown suite", []string{"test", "run", "--suite", "no-such-suite"}, []string{"NotFound"}},
			{"unknown suite run", []string{"test", "get", "00000000-0000-0000-0000-000000000000"}, []string{"NotFound"}},
			{"export unknown", []string{"test", "export", "no-such-suite"}, []string{"NotFound"}},
			{"unknown subcommand", []string{"test", "frob"}, []string{"unknown subcommand"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := c.run(t, tt.args...)
				require.Equal(t, 5, r.code, r)
				for _, w := range tt.want {
					require.Contains(t, r.stderr, w, r)
				}
				require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
				require.Empty(t, r.stdout, r)
			})
		}
		// Nothing of the invalid file was stored.
		r := c.run(t, "test", "export", "cli-bad")
		require.Equal(t, 5, r.code, r)
		require.Contains(t, r.stderr, "NotFound", r)
	})

	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		r := c.run(t, "test", "run", "-h")
		require.Equal(t, 0, r.code, r)
		for _, w := range []string{"--junit", "--json-report", "--tags", "0 PASSED, 1 FAILED"} {
			require.Contains(t, r.stderr, w)
		}
		r = c.run(t, "test")
		require.Equal(t, 5, r.code, r)
		require.Contains(t, r.stderr, "wayfinder test export SUITE", r)
	})
}

// lineStarting indexes output lines by their first two words ("✓ home").
func lineStarting(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if f := strings.Fields(line); len(f) >= 2 {
			m[f[0]+" "+f[1]] = line
		}
	}
	return m
}

// suiteRunID finds the suite run's ID in the summary line.
func suiteRunID(t *testing.T, out string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, " · suite run ")
	require.True(t, ok, out)
	require.GreaterOrEqual(t, len(rest), 36, out)
	return rest[:36]
}

// junitCases parses a JUnit report and returns its test cases by name,
// true for those with a failure or an error.
func junitCases(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(b))
	cases := map[string]bool{}
	var current string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "%s", b)
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "testcase":
				for _, a := range el.Attr {
					if a.Name.Local == "name" {
						current = a.Value
					}
				}
				require.NotEmpty(t, current, "a testcase without a name: %s", b)
				cases[current] = false
			case "failure", "error":
				require.NotEmpty(t, current, "%s outside a testcase: %s", el.Name.Local, b)
				cases[current] = true
			}
		case xml.EndElement:
			if el.Name.Local == "testcase" {
				current = ""
			}
		}
	}
	require.NotEmpty(t, cases, "no test cases: %s", b)
	return cases
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
