package llm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Turn answers one call of a Scripted model.
type Turn func(req *Request) (*Response, error)

// Scripted is a Model that answers from a script, for tests of the runner
// and the judge. It is safe for concurrent use.
type Scripted struct {
	name  string
	turns []Turn

	mu   sync.Mutex
	reqs []*Request
}

// NewScripted returns a model named name that answers its i-th call with
// turns[i]. Calls past the end fail with an error wrapping
// ErrInvalidRequest ("script exhausted").
func NewScripted(name string, turns ...Turn) *Scripted {
	return &Scripted{name: name, turns: slices.Clone(turns)}
}

// Provider is ProviderScripted.
func (s *Scripted) Provider() string { return ProviderScripted }

// Name is the name given to NewScripted.
func (s *Scripted) Name() string { return s.name }

// Complete records req and answers with the next turn. It returns ctx's
// error without using a turn when ctx is done. The turn gets its own copy of
// req.
func (s *Scripted) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	i := len(s.reqs)
	s.reqs = append(s.reqs, cloneRequest(req))
	s.mu.Unlock()
	if i >= len(s.turns) {
		return nil, &Error{
			Class:    ErrInvalidRequest,
			Provider: ProviderScripted,
			Message:  fmt.Sprintf("script exhausted: call %d of a %d-turn script", i+1, len(s.turns)),
		}
	}
	return s.turns[i](cloneRequest(req))
}

// Requests returns copies of the requests received so far, in order.
func (s *Scripted) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = cloneRequest(r)
	}
	return out
}

// Reply is a Turn that answers text and calls (StopReason "tool_use" when
// there are calls, else "end_turn"). Its Usage is a rough, deterministic
// estimate (four characters a token) so usage accounting has something to
// add up.
func Reply(text string, calls ...ToolCall) Turn {
	calls = cloneToolCalls(calls)
	return func(req *Request) (*Response, error) {
		resp := &Response{Text: text, ToolCalls: cloneToolCalls(calls), StopReason: "end_turn"}
		if len(calls) > 0 {
			resp.StopReason = "tool_use"
		}
		out := len(text)
		for _, c := range calls {
			out += len(c.Name) + len(c.Arguments)
		}
		resp.Usage = Usage{InputTokens: tokens(requestChars(req)), OutputTokens: tokens(out)}
		return resp, nil
	}
}

// Call is a ToolCall of the named tool with args marshalled to JSON (a
// json.RawMessage is used as is; nil is {}) and a fresh random ID. It
// panics when args cannot be marshalled: it is for writing scripts.
func Call(name string, args any) ToolCall {
	raw := json.RawMessage("{}")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			panic(fmt.Sprintf("llm.Call(%q): %v", name, err))
		}
		raw = b
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	return ToolCall{ID: "call_" + hex.EncodeToString(id), Name: name, Arguments: raw}
}

func tokens(chars int) int { return (chars + 3) / 4 }

func requestChars(req *Request) int {
	if req == nil {
		return 0
	}
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			n += len(p.Text)
			if p.ToolCall != nil {
				n += len(p.ToolCall.Name) + len(p.ToolCall.Arguments)
			}
			if p.ToolResult != nil {
				n += len(p.ToolResult.Content)
			}
		}
	}
	return n
}

// cloneRequest copies req deeply enough that changing the copy's messages,
// parts, images, tools or observation leaves req alone.
func cloneRequest(req *Request) *Request {
	if req == nil {
		return nil
	}
	c := *req
	c.Messages = slices.Clone(req.Messages)
	for i, m := range c.Messages {
		c.Messages[i].Parts = slices.Clone(m.Parts)
		for j, p := range c.Messages[i].Parts {
			c.Messages[i].Parts[j] = clonePart(p)
		}
	}
	c.Tools = slices.Clone(req.Tools)
	for i, t := range c.Tools {
		c.Tools[i].InputSchema = bytes.Clone(t.InputSchema)
	}
	if req.Temperature != nil {
		t := *req.Temperature
		c.Temperature = &t
	}
	if req.Observation != nil {
		o := *req.Observation
		o.Elements = slices.Clone(o.Elements)
		for i, e := range o.Elements {
			o.Elements[i].State = slices.Clone(e.State)
			o.Elements[i].Options = slices.Clone(e.Options)
		}
		c.Observation = &o
	}
	return &c
}

func clonePart(p Part) Part {
	if p.Image != nil {
		img := cloneImage(*p.Image)
		p.Image = &img
	}
	if p.ToolCall != nil {
		tc := *p.ToolCall
		tc.Arguments = bytes.Clone(tc.Arguments)
		p.ToolCall = &tc
	}
	if p.ToolResult != nil {
		tr := *p.ToolResult
		tr.Images = slices.Clone(tr.Images)
		for i, img := range tr.Images {
			tr.Images[i] = cloneImage(img)
		}
		p.ToolResult = &tr
	}
	return p
}

func cloneImage(img Image) Image {
	img.Data = bytes.Clone(img.Data)
	return img
}

func cloneToolCalls(calls []ToolCall) []ToolCall {
	calls = slices.Clone(calls)
	for i, c := range calls {
		calls[i].Arguments = bytes.Clone(c.Arguments)
	}
	return calls
}
