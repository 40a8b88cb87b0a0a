package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// NewGemini starts a fake Gemini API (POST
// /v1beta/models/{model}:generateContent). Its URL is the base URL the genai
// SDK expects (no version).
func NewGemini(t testing.TB, s Script) *Server {
	t.Helper()
	return newServer(t, s, geminiWire{}, "")
}

type geminiWire struct{}

const geminiPrefix, geminiSuffix = "/v1beta/models/", ":generateContent"

type gemRequest struct {
	Contents          []gemContent `json:"contents"`
	SystemInstruction *gemContent  `json:"systemInstruction"`
	GenerationConfig  *struct {
		Temperature     *float64 `json:"temperature"`
		MaxOutputTokens int      `json:"maxOutputTokens"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

type gemContent struct {
	Role  string    `json:"role"`
	Parts []gemPart `json:"parts"`
}

type gemPart struct {
	Text       string `json:"text"`
	InlineData *struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string                     `json:"id"`
		Name     string                     `json:"name"`
		Response map[string]json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

func (geminiWire) matches(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, geminiPrefix) && strings.HasSuffix(r.URL.Path, geminiSuffix)
}

func (geminiWire) decode(r *http.Request, body []byte) (Call, error) {
	var req gemRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	call := Call{Model: strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, geminiPrefix), geminiSuffix)}
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			call.System += p.Text
		}
	}
	if gc := req.GenerationConfig; gc != nil {
		call.Temperature = gc.Temperature
		call.MaxOutputTokens = gc.MaxOutputTokens
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			call.Tools = append(call.Tools, f.Name)
		}
	}
	if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		switch tc.FunctionCallingConfig.Mode {
		case "ANY":
			call.ToolChoice = "any"
		case "NONE":
			call.ToolChoice = "none"
		}
	}
	for i, c := range req.Contents {
		msg, err := decodeGemContent(c)
		if err != nil {
			return Call{}, fmt.Errorf("content %d: %w", i, err)
		}
		call.Messages = append(call.Messages, msg)
	}
	return call, nil
}

func decodeGemContent(c gemContent) (llm.Message, error) {
	msg := llm.Message{Role: llm.RoleUser}
	switch c.Role {
	case "user", "":
	case "model":
		msg.Role = llm.RoleAssistant
	default:
		return msg, fmt.Errorf("unknown role %q", c.Role)
	}
	for _, p := range c.Parts {
		switch {
		case p.InlineData != nil:
			data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
			if err != nil {
				return msg, fmt.Errorf("inlineData: %w", err)
			}
			msg.Parts = append(msg.Parts, llm.Part{Image: &llm.Image{MediaType: p.InlineData.MIMEType, Data: data}})
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			msg.Parts = append(msg.Parts, llm.Part{ToolCall: &llm.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: fc.Args}})
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			res := &llm.ToolResult{CallID: fr.ID, Name: fr.Name}
			switch {
			case fr.Response["error"] != nil:
				res.IsError = true
				res.Content = jsonText(fr.Response["error"])
			case fr.Response["output"] != nil:
				res.Content = jsonText(fr.Response["output"])
			default:
				b, _ := json.Marshal(fr.Response)
				res.Content = string(b)
			}
			msg.Parts = append(msg.Parts, llm.Part{ToolResult: res})
		default:
			msg.Parts = append(msg.Parts, llm.Part{Text: p.Text})
		}
	}
	return msg, nil
}

// jsonText is a JSON string's value, or other JSON as it is.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func (geminiWire) answer(call Call, reply Reply, seq int) any {
	parts := []map[string]any{}
	if reply.Text != "" {
		parts = append(parts, map[string]any{"text": reply.Text})
	}
	for _, tc := range reply.ToolCalls {
		fc := map[string]any{"name": tc.Name, "args": arguments(tc.Arguments)}
		if tc.ID != "" {
			fc["id"] = tc.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	finish := reply.StopReason
	if finish == "" {
		finish = "STOP"
	}
	u := reply.Usage
	usage := map[string]any{
		"promptTokenCount":     u.InputTokens,
		"candidatesTokenCount": u.OutputTokens,
		"totalTokenCount":      u.InputTokens + u.OutputTokens,
	}
	if u.CachedInputTokens > 0 {
		usage["cachedContentTokenCount"] = u.CachedInputTokens
	}
	return map[string]any{
		"candidates": []map[string]any{{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": finish,
			"index":        0,
		}},
		"usageMetadata": usage,
		"modelVersion":  call.Model,
		"responseId":    fmt.Sprintf("resp-%d", seq),
	}
}

func (geminiWire) failure(reply Reply) any {
	e := map[string]any{
		"code":    reply.Status,
		"message": errorMessage(reply),
		"status":  geminiStatus(reply.Status),
	}
	if reply.RetryAfter > 0 {
		e["details"] = []map[string]any{{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": fmt.Sprintf("%gs", reply.RetryAfter.Seconds()),
		}}
	}
	return map[string]any{"error": e}
}

func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	default:
		return "INTERNAL"
	}
}
