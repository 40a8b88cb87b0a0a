package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// Config configures the MCP endpoint.
type Config struct {
	// Runs creates and watches the runs: the API's own RunService, so
	// validation, tenant scoping, sealing and queueing are the API's.
	// Required.
	Runs *api.RunService
	// Authn identifies the caller of every request and every tool call
	// (Bearer API key, or local mode). Required.
	Authn *api.Authenticator
	// Sessions are the open sessions, shared with the workers' models
	// (Sessions.Model as provider Provider); nil leaves the session tools
	// out.
	Sessions *Sessions
	// Logger logs internal errors. Default slog.Default().
	Logger *slog.Logger
}

// Server is the MCP endpoint (streamable HTTP).
type Server struct {
	cfg     Config
	serving context.Context
	h       http.Handler
	wg      sync.WaitGroup
}

// New returns the MCP endpoint, to be mounted at /mcp. serving is the
// server's lifetime: session watchers end with it.
func New(serving context.Context, cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, serving: serving}
	srv := mcp.NewServer(&mcp.Implementation{Name: "wayfinder", Title: "Wayfinder", Version: "1"},
		&mcp.ServerOptions{Instructions: instructions})
	s.addTools(srv)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// Longer than the longest computer_use wait (1h).
		SessionTimeout: 2 * time.Hour,
		// A client that goes away cancels its call (and computer_use
		// cancels the run).
		PropagateRequestCancellation: true,
		// With API keys every request carries one, so DNS rebinding (what
		// the SDK's localhost check guards against) cannot act for a
		// caller; the check would refuse a proxy or mesh sidecar that
		// connects over 127.0.0.1. Local mode keeps it.
		DisableLocalhostProtection: !cfg.Authn.Local,
	})
	if !cfg.Authn.Local {
		// The SDK binds each MCP session to the tenant that opened it: a key
		// of another tenant that learns its Mcp-Session-Id cannot use or
		// delete it. ServeHTTP has authenticated the request already.
		h = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: tenant.ID(ctx), Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)(h)
	}
	// Browsers' cross-site requests are refused (local mode has no key).
	s.h = http.NewCrossOriginProtection().Handler(h)
	return s
}

const instructions = `Wayfinder runs browser tasks in an isolated, governed Chromium.
computer_use hands a whole task (goal + URL) to Wayfinder's agent and returns the result with the final screenshot.
To drive the browser yourself: open_session, then snapshot / click / fill / type / press_key / scroll / navigate with refs (@eN) from the latest snapshot, then close_session. Refs are valid for one snapshot only.`

// ServeHTTP authenticates the request and serves MCP. Every tool call is
// authenticated again from its request's headers and acts as that
// caller's tenant.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, err := s.cfg.Authn.AuthenticateHTTP(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	r = r.Clone(ctx)
	if r.Header.Get("Authorization") == "" {
		if tok := r.URL.Query().Get("access_token"); tok != "" {
			// Tool calls (and the session owner check) see only the headers.
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	s.h.ServeHTTP(w, r)
}

// Wait waits for the session watchers, which end with the serving
// context.
func (s *Server) Wait() { s.wg.Wait() }

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := api.ErrorStatus(r.Context(), s.cfg.Logger, err)
	raw, _ := protojson.Marshal(st.Proto())
	httpStatus := runtime.HTTPStatusFromCode(st.Code())
	if httpStatus == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="wayfinder"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(raw)
}

// caller authenticates a tool call from the headers of its HTTP request.
func (s *Server) caller(ctx context.Context, req *mcp.CallToolRequest) (context.Context, error) {
	r := (&http.Request{Header: http.Header{}, URL: &url.URL{}}).WithContext(ctx)
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		r.Header = req.Extra.Header
	}
	return s.cfg.Authn.AuthenticateHTTP(r)
}

// toolError turns an API error into the tool's error text: the status
// code, its message and one line per field violation, named by the tool's
// argument where there is one.
func (s *Server) toolError(ctx context.Context, err error) error {
	st := api.ErrorStatus(ctx, s.cfg.Logger, err)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", code.Code(st.Code()), st.Message())
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, fv := range br.GetFieldViolations() {
				fmt.Fprintf(&b, "\n- %s: %s", argumentName(fv.GetField()), fv.GetDescription())
			}
		}
	}
	return errors.New(b.String())
}

// argumentName names a request field by the tool argument that set it.
func argumentName(field string) string {
	switch field = strings.TrimPrefix(field, "flat_params."); field {
	case "start_url", "params.start_url":
		return "url"
	case "browser.run_timeout", "params.browser.run_timeout":
		return "timeout (run_timeout)"
	}
	return field
}

// computerUseInput are computer_use's arguments.
type computerUseInput struct {
	Goal           string            `json:"goal" jsonschema:"What to achieve, in plain language (at most 10000 characters)."`
	URL            string            `json:"url" jsonschema:"Absolute http(s) URL the browser opens first."`
	AllowedDomains string            `json:"allowed_domains,omitempty" jsonschema:"Comma-delimited domain patterns the browser may visit (example.com, *.example.com); when set every other domain is blocked."`
	BlockedDomains string            `json:"blocked_domains,omitempty" jsonschema:"Comma-delimited domain patterns the browser must never reach. Blocked wins over allowed."`
	MaxSteps       int               `json:"max_steps,omitempty" jsonschema:"Most agent steps, 1-500. Default 25."`
	Timeout        string            `json:"timeout,omitempty" jsonschema:"How long to wait for the result, e.g. 90s or 5m (1s-1h). Default 5m. When it passes the run is cancelled."`
	Provider       string            `json:"controller_provider,omitempty" jsonschema:"Model provider of the agent (anthropic, openai, gemini, steps). Default: the server's."`
	Model          string            `json:"controller_model,omitempty" jsonschema:"Model name of the agent. Default: the server's."`
	Options        map[string]string `json:"options,omitempty" jsonschema:"Further run parameters as strings, by their RunAndWait flat_params keys (judge_strategy, run_timeout, viewport, labels, ...)."`
}

func (s *Server) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "computer_use", Title: "Use a web site",
		Description: "Run a browser task in Wayfinder and wait for its result: status, summary, final URL, the steps taken and the final screenshot. " +
			"The run obeys the domain policy, is recorded (steps, screenshots, model calls) and belongs to your tenant."},
		s.computerUse)
	if s.cfg.Sessions != nil {
		s.addSessionTools(srv)
	}
}

func (s *Server) computerUse(ctx context.Context, req *mcp.CallToolRequest, in computerUseInput) (*mcp.CallToolResult, any, error) {
	ctx, err := s.caller(ctx, req)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	flat := flatArgs(in.Options, map[string]string{
		"goal": in.Goal, "start_url": in.URL, "allowed_domains": in.AllowedDomains, "blocked_domains": in.BlockedDomains,
		"max_steps": itoa(in.MaxSteps), "timeout": in.Timeout, "controller_provider": in.Provider, "controller_model": in.Model,
	})
	if flat["request_id"] == "" {
		// Lets a call whose client went away find and cancel its run.
		flat["request_id"] = "mcp-" + randomHex(12)
	}
	wreq := &wfv1.RunAndWaitRequest{FlatParams: flat}
	resp, err := s.cfg.Runs.RunAndWait(ctx, wreq)
	if err != nil {
		if ctx.Err() != nil {
			s.cancelRequested(ctx, wreq, "computer_use: the MCP client cancelled the call")
		}
		return nil, nil, s.toolError(ctx, err)
	}
	run := resp.GetRun()
	if resp.GetTimedOut() {
		if r, err := s.cfg.Runs.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.GetId(), Reason: "computer_use: the wait timed out"}); err == nil {
			run = r
		}
	}
	return s.runResult(ctx, run, resp.GetTimedOut())
}

// cancelRequested cancels the run req created (found again by its
// request ID) after its caller went away.
func (s *Server) cancelRequested(ctx context.Context, req *wfv1.RunAndWaitRequest, reason string) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	again := &wfv1.RunAndWaitRequest{FlatParams: req.GetFlatParams(), Timeout: durationpb.New(time.Second)}
	resp, err := s.cfg.Runs.RunAndWait(bg, again)
	if err != nil {
		return
	}
	if _, err := s.cfg.Runs.CancelRun(bg, &wfv1.CancelRunRequest{RunId: resp.GetRun().GetId(), Reason: reason}); err != nil {
		s.cfg.Logger.WarnContext(bg, "cancelling the run of a cancelled MCP call", "run_id", resp.GetRun().GetId(), "error", err)
	}
}

// runResult is what a finished (or abandoned) run tells the MCP client.
type runResult struct {
	RunID     string      `json:"run_id"`
	Status    string      `json:"status"`
	Success   bool        `json:"success"`
	Summary   string      `json:"summary,omitempty"`
	FinalURL  string      `json:"final_url,omitempty"`
	StepCount int32       `json:"step_count"`
	Steps     []stepBrief `json:"steps,omitempty"`
	Error     *runError   `json:"error,omitempty"`
	TimedOut  bool        `json:"timed_out,omitempty"`
}

type stepBrief struct {
	Number  int32    `json:"number"`
	URL     string   `json:"url,omitempty"`
	Actions []string `json:"actions,omitempty"`
	Error   string   `json:"error,omitempty"`
}

type runError struct {
	Category string `json:"category"`
	Message  string `json:"message"`
}

// maxSteps is how many steps a result lists.
const maxSteps = 100

// runResult renders run (read again, with its steps and final screenshot).
func (s *Server) runResult(ctx context.Context, run *wfv1.Run, timedOut bool) (*mcp.CallToolResult, any, error) {
	if r, err := s.cfg.Runs.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.GetId()}); err == nil {
		run = r
	}
	out := runResult{RunID: run.GetId(), Status: strings.TrimPrefix(run.GetStatus().String(), "RUN_STATUS_"),
		Success: run.GetSuccess(), Summary: run.GetSummary(), FinalURL: run.GetFinalUrl(), StepCount: run.GetStepCount(), TimedOut: timedOut}
	if e := run.GetError(); e != nil {
		out.Error = &runError{Category: strings.TrimPrefix(e.GetCategory().String(), "ERROR_CATEGORY_"), Message: e.GetMessage()}
	}
	if steps, err := s.cfg.Runs.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.GetId(), PageSize: maxSteps}); err == nil {
		for _, st := range steps.GetSteps() {
			b := stepBrief{Number: st.GetNumber(), URL: st.GetUrl(), Error: st.GetError().GetMessage()}
			for _, a := range st.GetActions() {
				b.Actions = append(b.Actions, a.GetTool()+": "+a.GetOutcome())
			}
			out.Steps = append(out.Steps, b)
		}
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("encode result: %w", err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}},
		IsError: run.GetStatus() == wfv1.RunStatus_RUN_STATUS_ERROR}
	if id := run.GetFinalScreenshotMediaId(); id != "" {
		if m, err := s.cfg.Runs.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: id}); err == nil {
			res.Content = append(res.Content, &mcp.ImageContent{Data: m.GetData(), MIMEType: m.GetContentType()})
		}
	}
	return res, nil, nil
}

// flatArgs merges a tool's typed arguments (non-empty values win) into its
// options.
func flatArgs(options, typed map[string]string) map[string]string {
	flat := make(map[string]string, len(options)+len(typed))
	for k, v := range options {
		flat[k] = v
	}
	for k, v := range typed {
		if v != "" {
			flat[k] = v
		}
	}
	return flat
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withTenant returns the serving context carrying ctx's caller.
func (s *Server) withTenant(ctx context.Context) context.Context {
	return tenant.With(s.serving, tenant.From(ctx))
}
