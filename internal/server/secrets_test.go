package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// formLoginPassword has characters every encoding changes, so each
// encoded form is a string of its own to look for.
const formLoginPassword = `Sw0rdf1sh "e2e" <&> 42`

// formLoginSite is a login form on 127.0.0.1 that records what it is sent
// and leads to a page that says so when the credentials are right.
type formLoginSite struct {
	*httptest.Server
	mu    sync.Mutex
	posts []url.Values
}

func newFormLoginSite(t *testing.T) *formLoginSite {
	t.Helper()
	s := &formLoginSite{}
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	const form = `<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form method="post" action="/session">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form>`
	mux.HandleFunc("/login", page(form))
	mux.HandleFunc("/favicon.ico", http.NotFound)
	// The dashboard echoes the password (badly built sites do): in text,
	// in a field and, base64-encoded, in its URL. Redaction hides it.
	mux.HandleFunc("/dashboard", page(`<!doctype html><title>Dashboard</title><h1>Welcome, alice</h1><p>You are signed in.</p>
<p>Your password is `+html.EscapeString(formLoginPassword)+`</p><label>Saved password <input value="`+html.EscapeString(formLoginPassword)+`"></label>`))
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.posts = append(s.posts, r.PostForm)
		s.mu.Unlock()
		if r.PostForm.Get("username") == "alice" && r.PostForm.Get("password") == formLoginPassword {
			http.Redirect(w, r, "/dashboard?t="+base64.URLEncoding.EncodeToString([]byte(formLoginPassword)), http.StatusSeeOther)
			return
		}
		page(strings.Replace(form, "<h1>Sign in</h1>", "<h1>Sign in</h1><p>Wrong username or password</p>", 1))(w, r)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *formLoginSite) received() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.posts...)
}

// syncBuffer is a buffer the server's log handlers write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// secretForms are the forms in which a value could escape: as is, escaped
// for URLs, HTML and JSON (with and without HTML escaping), base64 and hex.
func secretForms(v string) []string {
	js, _ := json.Marshal(v)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	raw := strings.TrimSpace(b.String())
	return []string{v, url.QueryEscape(v), url.PathEscape(v), html.EscapeString(v),
		string(js[1 : len(js)-1]), raw[1 : len(raw)-1],
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
		hex.EncodeToString([]byte(v))}
}

// requireNowhere fails when text holds the password in any form.
func requireNowhere(t *testing.T, what, text string) {
	t.Helper()
	for _, f := range secretForms(formLoginPassword) {
		if i := strings.Index(text, f); i >= 0 {
			lo, hi := max(0, i-200), min(len(text), i+len(f)+200)
			t.Fatalf("%s holds the password (as %q): …%s…", what, f, text[lo:hi])
		}
	}
}

// dumpDatabase renders every row of every table of the database as text:
// each column cast to text, bytea decoded as text (escape format) so that
// bytes stored in clear read as themselves.
func dumpDatabase(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.table_schema, c.table_name, c.column_name, c.data_type
		FROM information_schema.columns c
		JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
		ORDER BY c.table_schema, c.table_name, c.ordinal_position`)
	require.NoError(t, err)
	type table struct{ schema, name string }
	cols := map[table][]string{}
	var order []table
	for rows.Next() {
		var tb table
		var col, typ string
		require.NoError(t, rows.Scan(&tb.schema, &tb.name, &col, &typ))
		expr := pgx.Identifier{col}.Sanitize() + "::text"
		if typ == "bytea" {
			expr = "encode(" + pgx.Identifier{col}.Sanitize() + ", 'escape')"
		}
		if _, ok := cols[tb]; !ok {
			order = append(order, tb)
		}
		cols[tb] = append(cols[tb], "coalesce("+expr+", '')")
	}
	require.NoError(t, rows.Err())
	dump := map[string]string{}
	for _, tb := range order {
		name := pgx.Identifier{tb.schema, tb.name}.Sanitize()
		rows, err := conn.Query(ctx, "SELECT concat_ws(E'\\t', "+strings.Join(cols[tb], ", ")+") FROM "+name)
		require.NoError(t, err, name)
		var b strings.Builder
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			b.WriteString(line)
			b.WriteByte('\n')
		}
		require.NoError(t, rows.Err(), name)
		dump[name] = b.String()
	}
	return dump
}

func protoText(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := protojson.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func restBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	return string(b)
}

// A FormLogin run with an inline password logs in through the API with
// the offline step controller, which writes only placeholders, on a site
// that echoes the password after login; afterwards the password is in no
// table of the database (the sealed params hold it encrypted), no log line,
// no event stream and no API response.
func TestFormLoginPasswordIsFoundNowhere(t *testing.T) {
	t.Parallel()
	site := newFormLoginSite(t)
	logs := &syncBuffer{}
	db := storetest.NewDB(t)
	ts := startServer(t, db, serverOpts{logs: logs})
	ctx := context.Background()

	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: &wfv1.RunParams{
		Goal: "Fill \"Username\" with {{username}}\nFill \"Password\" with {{password}}\nClick \"Sign in\"\n" +
			"Expect text \"You are signed in\"",
		StartUrl:       site.URL + "/login",
		AllowedDomains: []string{"127.0.0.1"},
		Auth: &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{{
			Domains: []string{"127.0.0.1"},
			Method: &wfv1.DomainAuthBinding_Basic{Basic: &wfv1.BasicAuth{
				Username: "alice", Password: formLoginPassword, Strategy: wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_FORM_LOGIN,
			}},
		}}},
	}})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%s\n%s", final.Summary, describeSteps(t, ts.client, run.Id))

	posts := site.received()
	require.Len(t, posts, 1)
	require.Equal(t, "alice", posts[0].Get("username"))
	require.Equal(t, formLoginPassword, posts[0].Get("password"), "the login page got the real password")

	// The API: the run (its params redacted), its steps, prompt runs and
	// events, over gRPC and REST.
	got, err := ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, "[redacted]", got.GetParams().GetAuth().GetBindings()[0].GetBasic().GetPassword())
	requireNowhere(t, "CreateRun's answer", protoText(t, run))
	requireNowhere(t, "GetRun", protoText(t, got))
	list, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{})
	require.NoError(t, err)
	requireNowhere(t, "ListRuns", protoText(t, list))
	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	stepsText := protoText(t, steps)
	require.Contains(t, stepsText, `"value":"{{password}}"`, "the fill is recorded with its placeholder")
	require.Contains(t, stepsText, "/dashboard?t={{password}}", "the echoed password is redacted")
	requireNowhere(t, "ListSteps", stepsText)
	prs, err := ts.client.ListPromptRuns(ctx, &wfv1.ListPromptRunsRequest{RunId: run.Id, PageSize: 200})
	require.NoError(t, err)
	require.NotEmpty(t, prs.PromptRuns)
	requireNowhere(t, "ListPromptRuns", protoText(t, prs))
	evs := collectEvents(t, ts.client, run.Id, 0)
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		requireNowhere(t, "event "+ev.Type.String(), protoText(t, ev))
	}
	base := "http://" + ts.addrs.HTTP + "/v1/runs/" + run.Id
	for _, path := range []string{"", "/steps", "/prompt-runs?page_size=200", "/events"} {
		requireNowhere(t, "GET "+path, restBody(t, base+path))
	}

	// Every table of the database.
	dump := dumpDatabase(t, db)
	require.Contains(t, dump[`"public"."steps"`], "{{password}}", "the dump holds the steps")
	require.Contains(t, dump[`"public"."runs"`], run.Id)
	for table, text := range dump {
		requireNowhere(t, "table "+table, text)
	}
	var sealed []byte
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, conn.QueryRow(ctx, `SELECT sealed_params FROM runs WHERE id = $1`, run.Id).Scan(&sealed))
	require.NotEmpty(t, sealed, "the params with the password are kept, sealed")
	require.NotContains(t, string(sealed), formLoginPassword)

	// The server's log, at debug level.
	text := logs.String()
	require.Contains(t, text, run.Id, "the log covers the run")
	requireNowhere(t, "the server log", text)
}
