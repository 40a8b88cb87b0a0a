package promptrunner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// The wire types are the JSON contract of the package doc, version 1.

type wireRequest struct {
	Version         int           `json:"version"`
	RunID           string        `json:"run_id"`
	Role            string        `json:"role"`
	Step            int           `json:"step"`
	Model           string        `json:"model"`
	System          string        `json:"system"`
	Messages        []wireMessage `json:"messages"`
	Tools           []wireTool    `json:"tools"`
	ToolChoice      string        `json:"tool_choice"`
	Temperature     *float64      `json:"temperature,omitempty"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
}

type wireMessage struct {
	Role  string     `json:"role"`
	Parts []wirePart `json:"parts"`
}

// wirePart has exactly one field set; Text is a pointer so an empty text
// part is still {"text": ""}.
type wirePart struct {
	Text       *string         `json:"text,omitempty"`
	Image      *wireImage      `json:"image,omitempty"`
	ToolCall   *wireToolCall   `json:"tool_call,omitempty"`
	ToolResult *wireToolResult `json:"tool_result,omitempty"`
}

type wireImage struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"` // base64 in JSON
}

type wireToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireToolResult struct {
	CallID  string      `json:"call_id"`
	Name    string      `json:"name"`
	Content string      `json:"content"`
	IsError bool        `json:"is_error"`
	Images  []wireImage `json:"images,omitempty"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireResponse struct {
	Version    *int           `json:"version"`
	Text       string         `json:"text"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
	Usage      wireUsage      `json:"usage"`
	Model      string         `json:"model"`
	StopReason string         `json:"stop_reason"`
}

type wireUsage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens"`
}

// errEmpty marks an answer with neither text nor tool calls.
var errEmpty = errors.New("answer has neither text nor tool calls")

func toWire(req *llm.Request, c call, hint string, temp *float64, maxOut int) (*wireRequest, error) {
	if req == nil {
		return nil, errors.New("no request")
	}
	w := &wireRequest{
		Version:         Version,
		RunID:           c.runID,
		Role:            c.role,
		Step:            c.step,
		Model:           hint,
		System:          req.System,
		Messages:        make([]wireMessage, 0, len(req.Messages)),
		Tools:           make([]wireTool, 0, len(req.Tools)),
		ToolChoice:      req.ToolChoice,
		Temperature:     req.Temperature,
		MaxOutputTokens: req.MaxOutputTokens,
	}
	switch w.ToolChoice {
	case "":
		w.ToolChoice = "auto"
	case "any", "none":
	default:
		return nil, fmt.Errorf("unknown tool choice %q", req.ToolChoice)
	}
	if w.Temperature == nil {
		w.Temperature = temp
	}
	if w.MaxOutputTokens == 0 {
		w.MaxOutputTokens = maxOut
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return nil, fmt.Errorf("tool %q: input schema is not JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	for i, msg := range req.Messages {
		wm := wireMessage{Role: string(msg.Role), Parts: make([]wirePart, 0, len(msg.Parts))}
		for j, p := range msg.Parts {
			wp, err := partToWire(p)
			if err != nil {
				return nil, fmt.Errorf("message %d part %d: %w", i, j, err)
			}
			wm.Parts = append(wm.Parts, wp)
		}
		w.Messages = append(w.Messages, wm)
	}
	return w, nil
}

func partToWire(p llm.Part) (wirePart, error) {
	switch {
	case p.Image != nil:
		return wirePart{Image: imageToWire(*p.Image)}, nil
	case p.ToolCall != nil:
		args := p.ToolCall.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		if !json.Valid(args) {
			return wirePart{}, fmt.Errorf("tool call %q: arguments are not JSON", p.ToolCall.Name)
		}
		return wirePart{ToolCall: &wireToolCall{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: args}}, nil
	case p.ToolResult != nil:
		r := p.ToolResult
		wr := &wireToolResult{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError}
		for _, img := range r.Images {
			wr.Images = append(wr.Images, *imageToWire(img))
		}
		return wirePart{ToolResult: wr}, nil
	default:
		text := p.Text
		return wirePart{Text: &text}, nil
	}
}

func imageToWire(img llm.Image) *wireImage {
	data := img.Data
	if data == nil {
		data = []byte{}
	}
	return &wireImage{MediaType: img.MediaType, Data: data}
}

func fromWire(body []byte) (*llm.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("answer is not the prompt-runner JSON: %w", err)
	}
	if w.Version != nil && *w.Version != Version {
		return nil, fmt.Errorf("answer is version %d; this server speaks version %d", *w.Version, Version)
	}
	u := w.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedInputTokens < 0 {
		return nil, errors.New("answer has negative token counts")
	}
	resp := &llm.Response{
		Text:       w.Text,
		StopReason: w.StopReason,
		Model:      w.Model,
		Usage:      llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens},
	}
	for i, tc := range w.ToolCalls {
		if tc.Name == "" {
			return nil, fmt.Errorf("tool call %d has no name", i)
		}
		args, err := toolArguments(tc.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %d (%s): %w", i, tc.Name, err)
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: id, Name: tc.Name, Arguments: args})
	}
	if resp.Text == "" && len(resp.ToolCalls) == 0 {
		return nil, errEmpty
	}
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = "tool_use"
		}
	}
	return resp, nil
}

// toolArguments accepts a JSON object, a JSON string holding one, or
// nothing ({}).
func toolArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("arguments are not JSON")
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments are not a JSON object")
	}
	return bytes.Clone(raw), nil
}
