package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func requireCode(t *testing.T, err error, code string) *status.Status {
	t.Helper()
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, code, st.Code().String(), st.Message())
	return st
}

func fieldViolations(st *status.Status) []string {
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.FieldViolations {
				fields = append(fields, v.Field)
			}
		}
	}
	return fields
}

// TestBadInput sends invalid requests over gRPC and REST: each gets the
// right status with field violations, and nothing is written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	ts := startServer(t, dbURL, serverOpts{role: config.RoleAPI})
	ctx := context.Background()
	valid := func(mut func(p *wfv1.RunParams)) *wfv1.RunParams {
		p := &wfv1.RunParams{Goal: "Check", StartUrl: "https://example.com/"}
		mut(p)
		return p
	}
	grpcCases := []struct {
		name  string
		call  func() error
		code  string
		field string
	}{
		{"no params", func() error { _, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{}); return err }, "InvalidArgument", "params"},
		{"empty goal", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) { p.Goal = "  " })})
			return err
		}, "InvalidArgument", "params.goal"},
		{"malformed URL", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) { p.StartUrl = "http://[::1" })})
			return err
		}, "InvalidArgument", "params.start_url"},
		{"non-http URL", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) { p.StartUrl = "file:///etc/passwd" })})
			return err
		}, "InvalidArgument", "params.start_url"},
		{"max steps out of range", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) { p.MaxSteps = 10000 })})
			return err
		}, "InvalidArgument", "params.max_steps"},
		{"timeout out of range", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) {
				p.Browser = &wfv1.BrowserConfig{NavigationTimeout: durationpb.New(0)}
			})})
			return err
		}, "InvalidArgument", "params.browser.navigation_timeout"},
		{"bad domain pattern", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) { p.BlockedDomains = []string{"https://x.com/"} })})
			return err
		}, "InvalidArgument", "params.blocked_domains[0]"},
		{"later capability", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) {
				p.Headless = proto.Bool(false)
			})})
			return err
		}, "Unimplemented", "params.headless"},
		{"unknown prompt", func() error {
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: valid(func(p *wfv1.RunParams) {
				p.Goal = "Click the Go button"
				p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "checkout@2"}}
			})})
			return err
		}, "InvalidArgument", "params.controller.prompt_ref"},
		{"unknown status enum", func() error {
			_, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{Statuses: []wfv1.RunStatus{99}})
			return err
		}, "InvalidArgument", "statuses[0]"},
		{"bad page token", func() error {
			_, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{PageToken: "!!"})
			return err
		}, "InvalidArgument", "page_token"},
		{"bad page size", func() error {
			_, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{PageSize: 1000})
			return err
		}, "InvalidArgument", "page_size"},
		{"unknown run", func() error {
			_, err := ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: "6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11"})
			return err
		}, "NotFound", ""},
		{"malformed run id", func() error {
			_, err := ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: "nope"})
			return err
		}, "NotFound", ""},
		{"cancel unknown run", func() error {
			_, err := ts.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: "6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11"})
			return err
		}, "NotFound", ""},
		{"unknown media", func() error {
			_, err := ts.client.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: "6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11"})
			return err
		}, "NotFound", ""},
		{"run-and-wait bad timeout", func() error {
			_, err := ts.client.RunAndWait(ctx, &wfv1.RunAndWaitRequest{Params: valid(func(*wfv1.RunParams) {}), Timeout: durationpb.New(0)})
			return err
		}, "InvalidArgument", "timeout"},
	}
	for _, tc := range grpcCases {
		t.Run("grpc/"+tc.name, func(t *testing.T) {
			st := requireCode(t, tc.call(), tc.code)
			if tc.field != "" {
				require.Contains(t, fieldViolations(st), tc.field)
			}
		})
	}

	base := "http://" + ts.addrs.HTTP
	restCases := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"empty goal", http.MethodPost, "/v1/runs", `{"goal": "", "start_url": "https://example.com"}`, 400, "params.goal"},
		{"javascript URL", http.MethodPost, "/v1/runs", `{"goal": "x", "start_url": "javascript:alert(1)"}`, 400, "params.start_url"},
		{"negative max steps", http.MethodPost, "/v1/runs", `{"goal": "x", "start_url": "https://example.com", "max_steps": -3}`, 400, "params.max_steps"},
		{"unknown enum name", http.MethodGet, "/v1/runs?statuses=RUN_STATUS_BOGUS", "", 400, ""},
		{"malformed JSON", http.MethodPost, "/v1/runs", `{"goal": `, 400, ""},
		{"unknown field", http.MethodPost, "/v1/runs", `{"goal": "x", "start_url": "https://example.com", "bogus": 1}`, 400, ""},
		{"unimplemented field", http.MethodPost, "/v1/runs", `{"goal": "x", "start_url": "https://example.com", "headless": false}`, 501, "params.headless"},
		{"unknown run", http.MethodGet, "/v1/runs/6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11", "", 404, "not found"},
		{"unknown run events", http.MethodGet, "/v1/runs/6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11/events", "", 404, "not found"},
		{"unknown media", http.MethodGet, "/v1/media/6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11", "", 404, "not found"},
	}
	for _, tc := range restCases {
		t.Run("rest/"+tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			body := string(raw)
			if tc.path == "/v1/runs/6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11/events" {
				// Streams report errors in the body: the status line is
				// already sent when the handler runs.
				require.Contains(t, body, `"code":5`)
				return
			}
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Contains(t, body, tc.contains)
		})
	}

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var runs, jobs int
	require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM river_job)`).Scan(&runs, &jobs))
	require.Zero(t, runs, "bad input wrote nothing")
	require.Zero(t, jobs, "bad input enqueued nothing")
}
