package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// Session defaults.
const (
	sessionGoal     = "Interactive session: an MCP client drives the browser one action at a time."
	sessionMaxSteps = 100
	// sessionJudgeEvery keeps the heuristic judge from ending a session
	// whose client looks at an unchanged page for a while.
	sessionJudgeEvery = 100
)

type openInput struct {
	URL            string            `json:"url" jsonschema:"Absolute http(s) URL the session's browser opens."`
	Goal           string            `json:"goal,omitempty" jsonschema:"What the session is for (recorded with the run). Optional."`
	AllowedDomains string            `json:"allowed_domains,omitempty" jsonschema:"Comma-delimited domain patterns the browser may visit; when set every other domain is blocked."`
	BlockedDomains string            `json:"blocked_domains,omitempty" jsonschema:"Comma-delimited domain patterns the browser must never reach."`
	MaxSteps       int               `json:"max_steps,omitempty" jsonschema:"Most tool calls the session takes (each is a recorded step), 1-500. Default 100."`
	Timeout        string            `json:"timeout,omitempty" jsonschema:"The session's wall-clock limit, e.g. 30m. Default: the server's run timeout."`
	Options        map[string]string `json:"options,omitempty" jsonschema:"Further run parameters as strings, by their RunAndWait flat_params keys (viewport, locale, profile, labels, ...)."`
}

type snapshotInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Filter    string `json:"filter,omitempty" jsonschema:"Only elements whose role, name or context contain these words."`
}

type refInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Ref       string `json:"ref" jsonschema:"Element ref from the latest snapshot, e.g. @e7."`
}

type fillInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Ref       string `json:"ref" jsonschema:"Element ref of a text field from the latest snapshot."`
	Value     string `json:"value" jsonschema:"Text that replaces the field's content."`
}

type typeInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Ref       string `json:"ref,omitempty" jsonschema:"Element ref; default the focused element."`
	Text      string `json:"text" jsonschema:"Text typed key by key."`
}

type keyInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Keys      string `json:"keys" jsonschema:"Key or chord: Enter, Tab, Escape, Control+A; several separated by spaces."`
	Ref       string `json:"ref,omitempty" jsonschema:"Element to focus first."`
}

type scrollInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Ref       string `json:"ref,omitempty" jsonschema:"Element to scroll into view."`
	Direction string `json:"direction,omitempty" jsonschema:"up, down, left, right, top or bottom."`
	Amount    int    `json:"amount,omitempty" jsonschema:"Pixels. Default 300."`
}

type navigateInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	URL       string `json:"url" jsonschema:"Absolute URL (only allowed domains)."`
}

type closeInput struct {
	SessionID string `json:"session_id" jsonschema:"The session ID open_session returned."`
	Status    string `json:"status,omitempty" jsonschema:"success (default) or failed: the outcome recorded for the session's run."`
	Reason    string `json:"reason,omitempty" jsonschema:"Why; recorded as the run's summary."`
}

func (s *Server) addSessionTools(srv *mcp.Server) {
	const refs = " Returns the action's result (with a fresh snapshot when the page changed) and a screenshot. Refs are valid for the latest snapshot only."
	mcp.AddTool(srv, &mcp.Tool{Name: "open_session", Title: "Open a browser session",
		Description: "Open a governed browser session (an isolated context from the pool) at url, with the domain policy given. " +
			"Returns the session ID, the page (interactive elements with refs @eN) and a screenshot. Every call is recorded as a step of the session's run; close it with close_session."},
		s.openSession)
	mcp.AddTool(srv, &mcp.Tool{Name: "snapshot", Title: "Look at the page",
		Description: "Capture the session's page: its interactive elements with refs, and a screenshot."},
		func(ctx context.Context, req *mcp.CallToolRequest, in snapshotInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "get_snapshot", args("filter", in.Filter))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "click", Title: "Click", Description: "Click an element by ref." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in refInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "browser_click", args("ref", in.Ref))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fill", Title: "Fill a field", Description: "Replace a text field's content with value." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in fillInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "browser_fill", args("ref", in.Ref, "value", in.Value))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "type", Title: "Type text", Description: "Type text key by key into an element (or the focused one), keeping its content." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in typeInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "browser_type", args("ref", in.Ref, "text", in.Text))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "press_key", Title: "Press a key", Description: "Press a key or chord, on an element when ref is given." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in keyInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "browser_press_key", args("keys", in.Keys, "ref", in.Ref))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "scroll", Title: "Scroll", Description: "Scroll an element into view (ref) or the page (direction)." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in scrollInput) (*mcp.CallToolResult, any, error) {
			a := args("ref", in.Ref, "direction", in.Direction)
			if in.Amount > 0 {
				a["amount"] = in.Amount
			}
			return s.act(ctx, req, in.SessionID, "browser_scroll", a)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "navigate", Title: "Open a URL", Description: "Open a URL in the session's tab (the domain policy applies)." + refs},
		func(ctx context.Context, req *mcp.CallToolRequest, in navigateInput) (*mcp.CallToolResult, any, error) {
			return s.act(ctx, req, in.SessionID, "browser_navigate", args("url", in.URL))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "close_session", Title: "Close the session",
		Description: "End the session: its run ends with the status given (success is checked by the heuristic judge; a refused success is cancelled) and its browser context is returned to the pool. Returns the run's result."},
		s.closeSession)
}

// args builds tool arguments from name/value pairs, leaving out empty
// values.
func args(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}

func (s *Server) openSession(ctx context.Context, req *mcp.CallToolRequest, in openInput) (*mcp.CallToolResult, any, error) {
	ctx, err := s.caller(ctx, req)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	sess, err := s.cfg.Sessions.open(tenant.ID(ctx))
	if err != nil {
		return nil, nil, err
	}
	goal := in.Goal
	if goal == "" {
		goal = sessionGoal
	}
	// The session's own settings are typed, so options cannot change them.
	params := &wfv1.RunParams{
		Goal:       goal,
		Controller: &wfv1.ModelSettings{Provider: Provider, Model: sess.key},
		Judge: &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC,
			Frequency: &wfv1.JudgeFrequency{Frequency: &wfv1.JudgeFrequency_EveryNSteps{EveryNSteps: sessionJudgeEvery}}},
		MinConfidence:  proto.Float64(0),
		ActionsPerTurn: 1,
		Labels:         map[string]string{"mcp": "session"},
	}
	merged, err := api.MergeFlatParams(&wfv1.RunAndWaitRequest{Params: params, FlatParams: flatArgs(in.Options, map[string]string{
		"start_url": in.URL, "allowed_domains": in.AllowedDomains, "blocked_domains": in.BlockedDomains,
		"max_steps": itoa(in.MaxSteps), "run_timeout": in.Timeout,
	})})
	if err != nil {
		s.cfg.Sessions.drop(sess)
		return nil, nil, s.toolError(ctx, err)
	}
	if merged.Params.MaxSteps == 0 {
		merged.Params.MaxSteps = sessionMaxSteps
	}
	// No request ID: an idempotent retry would return a run whose
	// controller is another session's.
	run, err := s.cfg.Runs.CreateRun(ctx, &wfv1.CreateRunRequest{Params: merged.Params})
	if err != nil {
		s.cfg.Sessions.drop(sess)
		return nil, nil, s.toolError(ctx, err)
	}
	if err := s.cfg.Sessions.bind(sess, run.GetId()); err != nil {
		// Another run named the session's key and reached a worker first.
		s.cfg.Sessions.drop(sess)
		_, _ = s.cfg.Runs.CancelRun(context.WithoutCancel(ctx), &wfv1.CancelRunRequest{RunId: run.GetId(), Reason: "open_session: " + err.Error()})
		return nil, nil, s.toolError(ctx, err)
	}
	s.watch(ctx, sess)
	o, final, err := sess.await(ctx, "", nil)
	switch {
	case err != nil:
		_, _ = s.cfg.Runs.CancelRun(context.WithoutCancel(ctx), &wfv1.CancelRunRequest{RunId: run.GetId(), Reason: "open_session: the MCP client cancelled the call"})
		return nil, nil, s.toolError(ctx, err)
	case final != nil:
		res, _, err := s.runResult(ctx, final, false)
		if res != nil {
			res.IsError = true
		}
		return res, nil, err
	}
	return s.observed(sess, o)
}

// watch follows the session's run until it ends and then records its end
// and forgets the session.
func (s *Server) watch(ctx context.Context, sess *session) {
	wctx := s.withTenant(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.cfg.Sessions.drop(sess)
		var final *wfv1.Run
		err := s.cfg.Runs.FollowRunEvents(wctx, sess.runID, 0, func(ev *wfv1.RunEvent) error {
			if ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
				final = ev.GetRun()
			}
			return nil
		})
		if final == nil {
			if err != nil && wctx.Err() == nil {
				s.cfg.Logger.WarnContext(wctx, "following an MCP session's run", "run_id", sess.runID, "error", err)
			}
			final = &wfv1.Run{Id: sess.runID}
		}
		sess.finish(final)
	}()
}

// session returns the caller's open session, or an error that says what
// became of it.
func (s *Server) session(ctx context.Context, id string) (*session, *wfv1.Run, error) {
	if id == "" {
		var v fault.Violations
		v.Add("session_id", "required")
		return nil, nil, v.Err()
	}
	if sess := s.cfg.Sessions.get(tenant.ID(ctx), id); sess != nil {
		return sess, nil, nil
	}
	run, err := s.cfg.Runs.GetRun(ctx, &wfv1.GetRunRequest{RunId: id})
	if err == nil && store.IsTerminal(run.GetStatus()) {
		return nil, run, nil
	}
	return nil, nil, fmt.Errorf("session %q is not open on this server (a session lives on the replica that opened it): %w", id, fault.ErrNotFound)
}

// act hands one browser tool call to a session and returns the runner's
// answer, or the run's result when the session ended.
func (s *Server) act(ctx context.Context, req *mcp.CallToolRequest, id, tool string, a map[string]any) (*mcp.CallToolResult, any, error) {
	ctx, err := s.caller(ctx, req)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	sess, ended, err := s.session(ctx, id)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	if ended != nil {
		return s.endedResult(ctx, ended)
	}
	o, final, err := sess.do(ctx, tool, a)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	if final != nil {
		return s.endedResult(ctx, final)
	}
	return s.observed(sess, o)
}

// endedResult is the result of a call to a session that has ended.
func (s *Server) endedResult(ctx context.Context, run *wfv1.Run) (*mcp.CallToolResult, any, error) {
	res, _, err := s.runResult(ctx, run, false)
	if res != nil {
		res.IsError = true
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: "The session has ended; its run's result follows."}}, res.Content...)
	}
	return res, nil, err
}

func (s *Server) closeSession(ctx context.Context, req *mcp.CallToolRequest, in closeInput) (*mcp.CallToolResult, any, error) {
	ctx, err := s.caller(ctx, req)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	status, reason := in.Status, in.Reason
	if status == "" {
		status = "success"
	}
	if status != "success" && status != "failed" {
		var v fault.Violations
		v.Add("status", `must be "success" or "failed"`)
		return nil, nil, s.toolError(ctx, v.Err())
	}
	if reason == "" {
		reason = "the MCP client closed the session"
	}
	sess, ended, err := s.session(ctx, in.SessionID)
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	if ended != nil {
		return s.runResult(ctx, ended, false)
	}
	_, final, err := sess.do(ctx, "complete_task", map[string]any{"status": status, "reason": reason})
	if err != nil {
		return nil, nil, s.toolError(ctx, err)
	}
	if final == nil {
		// The judge did not accept the claim; the client is done anyway.
		if _, err := s.cfg.Runs.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: sess.runID, Reason: "closed by its MCP client: " + reason}); err != nil {
			return nil, nil, s.toolError(ctx, err)
		}
		select {
		case <-sess.ended:
			final = sess.finalRun()
		case <-ctx.Done():
			return nil, nil, s.toolError(ctx, ctx.Err())
		}
	}
	return s.runResult(ctx, final, false)
}

// observed renders the runner's answer to a session call.
func (s *Server) observed(sess *session, o *observation) (*mcp.CallToolResult, any, error) {
	body := map[string]any{"session_id": sess.runID}
	if o.page != "" {
		body["page"] = o.page
	}
	if o.result != "" {
		var v any
		if json.Valid([]byte(o.result)) {
			v = json.RawMessage(o.result)
		} else {
			v = o.result
		}
		body["result"] = v
	}
	if len(o.notes) > 0 {
		body["notes"] = o.notes
	}
	text, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("encode result: %w", err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, IsError: o.isError}
	if o.image != nil && len(o.image.Data) > 0 {
		res.Content = append(res.Content, &mcp.ImageContent{Data: o.image.Data, MIMEType: o.image.MediaType})
	}
	return res, nil, nil
}
