package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// NewAnthropic starts a fake Anthropic Messages API (POST /v1/messages).
// Its URL is the base URL the Anthropic SDK expects (no /v1).
func NewAnthropic(t testing.TB, s Script) *Server {
	t.Helper()
	return newServer(t, s, anthropicWire{}, "")
}

type anthropicWire struct{}

type antRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      json.RawMessage `json:"system"`
	Messages    []antMessage    `json:"messages"`
	Temperature *float64        `json:"temperature"`
	Tools       []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
	} `json:"tool_choice"`
}

type antMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *antSource      `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type antSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

func (anthropicWire) matches(r *http.Request) bool { return r.URL.Path == "/v1/messages" }

func (anthropicWire) decode(_ *http.Request, body []byte) (Call, error) {
	var req antRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	if req.MaxTokens <= 0 {
		return Call{}, fmt.Errorf("max_tokens is required")
	}
	system, err := decodeText(req.System)
	if err != nil {
		return Call{}, fmt.Errorf("system: %w", err)
	}
	call := Call{
		Model:           req.Model,
		System:          system,
		Temperature:     req.Temperature,
		MaxOutputTokens: req.MaxTokens,
	}
	for _, t := range req.Tools {
		if len(t.InputSchema) == 0 {
			return Call{}, fmt.Errorf("tool %s: input_schema is required", t.Name)
		}
		call.Tools = append(call.Tools, t.Name)
	}
	if req.ToolChoice != nil && req.ToolChoice.Type != "auto" {
		call.ToolChoice = req.ToolChoice.Type
	}
	for i, m := range req.Messages {
		msg, err := decodeAntMessage(m)
		if err != nil {
			return Call{}, fmt.Errorf("message %d: %w", i, err)
		}
		call.Messages = append(call.Messages, msg)
	}
	return call, nil
}

func decodeAntMessage(m antMessage) (llm.Message, error) {
	msg := llm.Message{Role: llm.Role(m.Role)}
	var text string
	if err := json.Unmarshal(m.Content, &text); err == nil {
		msg.Parts = []llm.Part{{Text: text}}
		return msg, nil
	}
	var blocks []antBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return msg, err
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			msg.Parts = append(msg.Parts, llm.Part{Text: b.Text})
		case "image":
			img, err := decodeAntImage(b.Source)
			if err != nil {
				return msg, err
			}
			msg.Parts = append(msg.Parts, llm.Part{Image: img})
		case "tool_use":
			msg.Parts = append(msg.Parts, llm.Part{ToolCall: &llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input}})
		case "tool_result":
			res, err := decodeAntToolResult(b)
			if err != nil {
				return msg, err
			}
			msg.Parts = append(msg.Parts, llm.Part{ToolResult: res})
		default:
			return msg, fmt.Errorf("unknown content block type %q", b.Type)
		}
	}
	return msg, nil
}

func decodeAntImage(src *antSource) (*llm.Image, error) {
	if src == nil || src.Type != "base64" {
		return nil, fmt.Errorf("image: want a base64 source")
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return &llm.Image{MediaType: src.MediaType, Data: data}, nil
}

func decodeAntToolResult(b antBlock) (*llm.ToolResult, error) {
	res := &llm.ToolResult{CallID: b.ToolUseID, IsError: b.IsError}
	var text string
	if err := json.Unmarshal(b.Content, &text); err == nil || len(b.Content) == 0 {
		res.Content = text
		return res, nil
	}
	var blocks []antBlock
	if err := json.Unmarshal(b.Content, &blocks); err != nil {
		return nil, fmt.Errorf("tool_result: %w", err)
	}
	for _, c := range blocks {
		switch c.Type {
		case "text":
			res.Content += c.Text
		case "image":
			img, err := decodeAntImage(c.Source)
			if err != nil {
				return nil, err
			}
			res.Images = append(res.Images, *img)
		default:
			return nil, fmt.Errorf("tool_result: unexpected block type %q", c.Type)
		}
	}
	return res, nil
}

func (anthropicWire) answer(call Call, reply Reply, seq int) any {
	content := []map[string]any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text, "citations": nil})
	}
	for i, tc := range reply.ToolCalls {
		content = append(content, map[string]any{
			"type":  "tool_use",
			"id":    callID("toolu_", seq, i, tc),
			"name":  tc.Name,
			"input": arguments(tc.Arguments),
		})
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	u := reply.Usage
	return map[string]any{
		"id":            fmt.Sprintf("msg_%d", seq),
		"type":          "message",
		"role":          "assistant",
		"model":         call.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                u.InputTokens - u.CachedInputTokens,
			"output_tokens":               u.OutputTokens,
			"cache_read_input_tokens":     u.CachedInputTokens,
			"cache_creation_input_tokens": 0,
			"service_tier":                "standard",
		},
	}
}

func (anthropicWire) failure(reply Reply) any {
	return map[string]any{
		"type": "error",
		"error": map[string]any{
			"type":    anthropicErrorType(reply.Status),
			"message": errorMessage(reply),
		},
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}
