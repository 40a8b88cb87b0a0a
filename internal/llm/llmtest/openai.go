package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// NewOpenAI starts a fake OpenAI Chat Completions API. Its URL ends in /v1,
// as a local OpenAI-compatible server's does (vLLM, Ollama, LM Studio); it
// answers POST …/chat/completions under any prefix, so the SDK's default
// layout works too.
func NewOpenAI(t testing.TB, s Script) *Server {
	t.Helper()
	return newServer(t, s, openaiWire{}, "/v1")
}

type openaiWire struct{}

type oaiRequest struct {
	Model               string       `json:"model"`
	Messages            []oaiMessage `json:"messages"`
	Temperature         *float64     `json:"temperature"`
	MaxTokens           int          `json:"max_tokens"`
	MaxCompletionTokens int          `json:"max_completion_tokens"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type oaiPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

func (openaiWire) matches(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/chat/completions")
}

func (openaiWire) decode(_ *http.Request, body []byte) (Call, error) {
	var req oaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	call := Call{
		Model:           req.Model,
		Temperature:     req.Temperature,
		MaxOutputTokens: max(req.MaxCompletionTokens, req.MaxTokens),
	}
	for _, t := range req.Tools {
		if t.Type != "function" {
			return Call{}, fmt.Errorf("tool type %q", t.Type)
		}
		call.Tools = append(call.Tools, t.Function.Name)
	}
	var choice string
	if len(req.ToolChoice) > 0 && json.Unmarshal(req.ToolChoice, &choice) == nil {
		switch choice {
		case "required":
			call.ToolChoice = "any"
		case "none":
			call.ToolChoice = "none"
		}
	}
	for i, m := range req.Messages {
		if err := decodeOAIMessage(&call, m); err != nil {
			return Call{}, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return call, nil
}

func decodeOAIMessage(call *Call, m oaiMessage) error {
	switch m.Role {
	case "system", "developer":
		text, err := decodeText(m.Content)
		if err != nil {
			return err
		}
		if call.System != "" {
			call.System += "\n"
		}
		call.System += text
	case "user":
		parts, err := decodeOAIParts(m.Content)
		if err != nil {
			return err
		}
		call.Messages = append(call.Messages, llm.Message{Role: llm.RoleUser, Parts: parts})
	case "assistant":
		parts, err := decodeOAIParts(m.Content)
		if err != nil {
			return err
		}
		for _, tc := range m.ToolCalls {
			parts = append(parts, llm.Part{ToolCall: &llm.ToolCall{
				ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments),
			}})
		}
		call.Messages = append(call.Messages, llm.Message{Role: llm.RoleAssistant, Parts: parts})
	case "tool":
		if m.ToolCallID == "" {
			return fmt.Errorf("tool message without tool_call_id")
		}
		text, err := decodeText(m.Content)
		if err != nil {
			return err
		}
		part := llm.Part{ToolResult: &llm.ToolResult{CallID: m.ToolCallID, Content: text}}
		// Consecutive tool messages are one user turn in llm form.
		if n := len(call.Messages); n > 0 && isToolResults(call.Messages[n-1]) {
			call.Messages[n-1].Parts = append(call.Messages[n-1].Parts, part)
		} else {
			call.Messages = append(call.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{part}})
		}
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	return nil
}

func isToolResults(m llm.Message) bool {
	return m.Role == llm.RoleUser && len(m.Parts) > 0 && m.Parts[0].ToolResult != nil
}

func decodeOAIParts(raw json.RawMessage) ([]llm.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return []llm.Part{{Text: text}}, nil
	}
	var parts []oaiPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	var out []llm.Part
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, llm.Part{Text: p.Text})
		case "image_url":
			if p.ImageURL == nil {
				return nil, fmt.Errorf("image_url part without image_url")
			}
			img, err := decodeDataURL(p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			out = append(out, llm.Part{Image: img})
		default:
			return nil, fmt.Errorf("unknown content part type %q", p.Type)
		}
	}
	return out, nil
}

// decodeDataURL reads a data:<media type>;base64,<data> URL.
func decodeDataURL(u string) (*llm.Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, fmt.Errorf("image_url: want a data: URL")
	}
	mediaType, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return nil, fmt.Errorf("image_url: want base64 data")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("image_url: %w", err)
	}
	return &llm.Image{MediaType: mediaType, Data: b}, nil
}

func (openaiWire) answer(call Call, reply Reply, seq int) any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if reply.Text != "" {
		msg["content"] = reply.Text
	}
	if len(reply.ToolCalls) > 0 {
		calls := make([]map[string]any, len(reply.ToolCalls))
		for i, tc := range reply.ToolCalls {
			args := string(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			calls[i] = map[string]any{
				"id":   callID("call_", seq, i, tc),
				"type": "function",
				"function": map[string]any{
					"name":      tc.Name,
					"arguments": args,
				},
			}
		}
		msg["tool_calls"] = calls
	}
	finish := reply.StopReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	u := reply.Usage
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", seq),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   call.Model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       msg,
			"finish_reason": finish,
			"logprobs":      nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":     u.InputTokens,
			"completion_tokens": u.OutputTokens,
			"total_tokens":      u.InputTokens + u.OutputTokens,
			"prompt_tokens_details": map[string]any{
				"cached_tokens": u.CachedInputTokens,
				"audio_tokens":  0,
			},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
		"system_fingerprint": "fp_llmtest",
	}
}

func (openaiWire) failure(reply Reply) any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case reply.Status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case reply.Status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case reply.Status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{
		"message": errorMessage(reply),
		"type":    typ,
		"param":   nil,
		"code":    code,
	}}
}
