package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// Provider is the model provider of session runs: their controller is the
// MCP client itself (see Sessions.Model).
const Provider = "mcp-session"

// DefaultIdle is how long an open session waits for its client's next
// call before it ends FAILED.
const DefaultIdle = 5 * time.Minute

// maxSessions bounds the sessions one process holds open, and
// maxTenantSessions those of one tenant, so that one tenant cannot take
// every session of a replica.
const (
	maxSessions       = 256
	maxTenantSessions = 32
)

// errSessionsFull: the process holds maxSessions open sessions;
// errTenantSessionsFull: the tenant holds maxTenantSessions.
var (
	errSessionsFull       = errors.New("too many open sessions on this server; close one first")
	errTenantSessionsFull = fmt.Errorf("your tenant has %d open sessions on this server; close one first", maxTenantSessions)
)

// Sessions are the open sessions of this process. A session is a run whose
// controller model is the MCP client: the run's worker asks the model for
// its next tool call (Complete), the model hands it the call the client
// makes next and gives the client the runner's answer. The call travels
// through a channel in this process, so a session is pinned to the
// replica that opened it: its run must execute here (a run of an unknown
// session ends ERROR at once). A Sessions is safe for concurrent use.
type Sessions struct {
	idle  time.Duration
	mu    sync.Mutex
	byKey map[string]*session // by the run's controller model name
	byRun map[string]*session // by run ID (the session ID clients use)
}

// NewSessions returns an empty registry whose sessions end after idle
// without a client call (0: DefaultIdle).
func NewSessions(idle time.Duration) *Sessions {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Sessions{idle: idle, byKey: map[string]*session{}, byRun: map[string]*session{}}
}

// errOtherRun: a run names the key of a session that belongs to another
// run. Only the session's own run may drive its client's calls.
var errOtherRun = errors.New("the MCP session named by the run's controller belongs to another run")

// Model builds the controller of a session run (a worker.Models Extra
// provider under the name Provider): s.Model is the session's key. The
// key is readable in the run's params, so it is not enough: a session
// serves exactly one run, the first that a worker builds a model for
// (bind refuses the session when that is not the run openSession
// created). Models built without a run (CreateRun's validation) are never
// asked anything.
func (ss *Sessions) Model(s llm.Settings) (llm.Model, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.byKey[s.Model]
	if sess == nil {
		return nil, errors.New("the run's MCP session is not open on this server replica (a session is pinned to the replica that opened it)")
	}
	if s.RunID != "" {
		switch sess.runID {
		case "":
			sess.runID = s.RunID // the worker got here before bind
			ss.byRun[s.RunID] = sess
		case s.RunID:
		default:
			return nil, errOtherRun
		}
	}
	return &sessionModel{s: sess}, nil
}

// open registers a new session of tenant and returns it with its key.
func (ss *Sessions) open(tenantID string) (*session, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	s := &session{key: "s_" + hex.EncodeToString(b), tenant: tenantID, calls: make(chan llm.ToolCall),
		changed: make(chan struct{}), ended: make(chan struct{}), idle: ss.idle}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byKey) >= maxSessions {
		return nil, errSessionsFull
	}
	n := 0
	for _, o := range ss.byKey {
		if o.tenant == tenantID {
			n++
		}
	}
	if n >= maxTenantSessions {
		return nil, errTenantSessionsFull
	}
	ss.byKey[s.key] = s
	return s, nil
}

// bind records the session's run. It fails when a worker already built
// the session's model for another run (one that named the session's key).
func (ss *Sessions) bind(s *session, runID string) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.runID != "" && s.runID != runID {
		return errOtherRun
	}
	s.runID = runID
	ss.byRun[runID] = s
	return nil
}

// drop forgets s.
func (ss *Sessions) drop(s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byKey, s.key)
	if s.runID != "" {
		delete(ss.byRun, s.runID)
	}
}

// get returns tenant's open session by ID, or nil.
func (ss *Sessions) get(tenantID, id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byRun[id]
	if s == nil || s.tenant != tenantID {
		return nil
	}
	return s
}

// session is one open session.
type session struct {
	key, tenant string
	runID       string // set by bind
	idle        time.Duration
	// calls hands the client's next call to the waiting Complete.
	calls chan llm.ToolCall
	// op serialises the client's calls: one at a time.
	op sync.Mutex

	mu      sync.Mutex
	nextID  int
	obs     *observation  // the runner's latest answer
	changed chan struct{} // closed (and replaced) when obs changes
	final   *wfv1.Run     // set once the run ended
	ended   chan struct{} // closed once final is set
}

// observation is what the runner answered: the result of the client's
// last call, the notes that came with it and the screenshot after it.
type observation struct {
	// callID is the call it answers; "" for the opening page.
	callID  string
	result  string
	isError bool
	// page is the opening page (the first observation only).
	page  string
	notes []string
	image *llm.Image
}

// publish makes o the latest observation.
func (s *session) publish(o *observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs = o
	close(s.changed)
	s.changed = make(chan struct{})
}

// finish records the run's end.
func (s *session) finish(run *wfv1.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final == nil {
		s.final = run
		close(s.ended)
	}
}

// do hands the runner one tool call and waits for its answer or the run's
// end (then the observation is nil and the final run is returned).
func (s *session) do(ctx context.Context, name string, args map[string]any) (*observation, *wfv1.Run, error) {
	s.op.Lock()
	defer s.op.Unlock()
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, nil, fmt.Errorf("encode arguments: %w", err)
	}
	s.mu.Lock()
	s.nextID++
	call := llm.ToolCall{ID: fmt.Sprintf("mcp_%d", s.nextID), Name: name, Arguments: raw}
	before := s.obs
	s.mu.Unlock()
	select {
	case s.calls <- call:
	case <-s.ended:
		return nil, s.finalRun(), nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return s.await(ctx, call.ID, before)
}

// await waits for the observation answering callID, or a new opening page
// (a run resumed after its worker stopped) other than before, or the
// run's end. An empty callID takes the first observation.
func (s *session) await(ctx context.Context, callID string, before *observation) (*observation, *wfv1.Run, error) {
	for {
		s.mu.Lock()
		o, final, changed := s.obs, s.final, s.changed
		s.mu.Unlock()
		if o != nil && (callID == "" || o.callID == callID || (o.callID == "" && o != before)) {
			return o, nil, nil
		}
		if final != nil {
			return nil, final, nil
		}
		select {
		case <-changed:
		case <-s.ended:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (s *session) finalRun() *wfv1.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}

// sessionModel is a session's controller: the MCP client.
type sessionModel struct{ s *session }

func (m *sessionModel) Provider() string { return Provider }
func (m *sessionModel) Name() string     { return "mcp-client" }

// Complete gives the client the runner's answer to its last call (or the
// opening page) and returns the client's next call. A client that makes
// no call for the session's idle time ends the session FAILED.
func (m *sessionModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.s.publish(observe(req))
	t := time.NewTimer(m.s.idle)
	defer t.Stop()
	select {
	case call := <-m.s.calls:
		return &llm.Response{ToolCalls: []llm.ToolCall{call}, StopReason: "tool_use"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return &llm.Response{StopReason: "tool_use", ToolCalls: []llm.ToolCall{llm.Call("complete_task", map[string]any{
			"status": "failed", "reason": fmt.Sprintf("the MCP client made no call for %s; the session was closed", m.s.idle)})}}, nil
	}
}

// observe reads the runner's answer from the request's last message: the
// tool result of the client's last call, the screenshot and any notes; in
// the opening message, the page.
func observe(req *llm.Request) *observation {
	o := &observation{}
	if len(req.Messages) == 0 {
		return o
	}
	last := req.Messages[len(req.Messages)-1]
	for _, p := range last.Parts {
		switch {
		case p.ToolResult != nil:
			o.callID, o.result, o.isError = p.ToolResult.CallID, p.ToolResult.Content, p.ToolResult.IsError
			if n := len(p.ToolResult.Images); n > 0 {
				o.image = &p.ToolResult.Images[n-1]
			}
		case p.Image != nil:
			o.image = p.Image
		case strings.HasPrefix(p.Text, "Goal: "):
		case strings.HasPrefix(p.Text, "The browser opened "):
			o.page = p.Text
		case p.Text != "":
			o.notes = append(o.notes, p.Text)
		}
	}
	return o
}
