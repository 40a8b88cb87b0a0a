package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// generatedIDPrefix starts the IDs this package makes up for tool calls
// that came without one; such IDs are never sent back to the API.
const generatedIDPrefix = "gemini_call_"

// request translates req into generateContent's contents and config.
func (m *model) request(req *llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	config := &genai.GenerateContentConfig{}
	switch {
	case req.MaxOutputTokens > 0:
		config.MaxOutputTokens = int32(req.MaxOutputTokens)
	case m.maxTokens > 0:
		config.MaxOutputTokens = int32(m.maxTokens)
	}
	switch {
	case req.Temperature != nil:
		config.Temperature = genai.Ptr(float32(*req.Temperature))
	case m.temperature != nil:
		config.Temperature = genai.Ptr(float32(*m.temperature))
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			schema := map[string]any{"type": "object", "properties": map[string]any{}}
			if len(bytes.TrimSpace(t.InputSchema)) > 0 {
				schema = nil
				if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
					return nil, nil, fmt.Errorf("tool %s: the input schema is not a JSON object", t.Name)
				}
			}
			decls[i] = &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema}
		}
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
		var mode genai.FunctionCallingConfigMode
		switch req.ToolChoice {
		case "":
		case "any":
			mode = genai.FunctionCallingConfigModeAny
		case "none":
			mode = genai.FunctionCallingConfigModeNone
		default:
			return nil, nil, fmt.Errorf("unknown tool choice %q", req.ToolChoice)
		}
		if mode != "" {
			config.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode}}
		}
	}

	// Results are paired with calls by name; a result that does not repeat
	// its tool's name takes it from its call.
	names := map[string]string{}
	contents := make([]*genai.Content, 0, len(req.Messages))
	for i, msg := range req.Messages {
		var c *genai.Content
		var err error
		switch msg.Role {
		case llm.RoleAssistant:
			c, err = m.modelContent(msg, names)
		case llm.RoleUser:
			c, err = userContent(msg, names)
		default:
			err = fmt.Errorf("unknown role %q", msg.Role)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		contents = append(contents, c)
	}
	return contents, config, nil
}

func (m *model) modelContent(msg llm.Message, names map[string]string) (*genai.Content, error) {
	c := &genai.Content{Role: genai.RoleModel}
	calls := 0
	for _, part := range msg.Parts {
		switch {
		case part.Text != "":
			c.Parts = append(c.Parts, &genai.Part{Text: part.Text})
		case part.ToolCall != nil:
			tc := part.ToolCall
			var args map[string]any
			if len(bytes.TrimSpace(tc.Arguments)) > 0 {
				if err := json.Unmarshal(tc.Arguments, &args); err != nil {
					return nil, fmt.Errorf("the arguments of the %s tool call are not a JSON object", tc.Name)
				}
			}
			names[tc.ID] = tc.Name
			p := &genai.Part{
				FunctionCall:     &genai.FunctionCall{ID: vendorID(tc.ID), Name: tc.Name, Args: args},
				ThoughtSignature: m.signatures.get(tc.ID),
			}
			if p.ThoughtSignature == nil && calls == 0 {
				// Thinking models want the first call of a turn signed;
				// a call whose signature is gone (made by another
				// process, or another model) gets the documented
				// placeholder that skips the check.
				p.ThoughtSignature = skipSignature()
			}
			calls++
			c.Parts = append(c.Parts, p)
		case part.Image != nil:
			return nil, fmt.Errorf("an image in an assistant message")
		case part.ToolResult != nil:
			return nil, fmt.Errorf("a tool result in an assistant message")
		}
	}
	return c, nil
}

// userContent translates a user message: function responses first, then
// the results' images (as inline data) and the message's own parts.
func userContent(msg llm.Message, names map[string]string) (*genai.Content, error) {
	c := &genai.Content{Role: genai.RoleUser}
	var rest []*genai.Part
	for _, part := range msg.Parts {
		switch {
		case part.Text != "":
			rest = append(rest, &genai.Part{Text: part.Text})
		case part.Image != nil:
			rest = append(rest, inline(*part.Image))
		case part.ToolCall != nil:
			return nil, fmt.Errorf("a tool call in a user message")
		case part.ToolResult != nil:
			r := part.ToolResult
			name := r.Name
			if name == "" {
				name = names[r.CallID]
			}
			if name == "" {
				return nil, fmt.Errorf("the result of call %s names no tool", r.CallID)
			}
			key := "output"
			if r.IsError {
				key = "error"
			}
			c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID:       vendorID(r.CallID),
				Name:     name,
				Response: map[string]any{key: resultValue(r.Content)},
			}})
			for _, img := range r.Images {
				rest = append(rest, inline(img))
			}
		}
	}
	c.Parts = append(c.Parts, rest...)
	return c, nil
}

// resultValue is a result's content: its JSON when it is JSON, else the text.
func resultValue(content string) any {
	var v any
	if json.Unmarshal([]byte(content), &v) == nil {
		return v
	}
	return content
}

func inline(img llm.Image) *genai.Part {
	return &genai.Part{InlineData: &genai.Blob{MIMEType: img.MediaType, Data: img.Data}}
}

// vendorID is the ID to send for a call: none for a generated one.
func vendorID(id string) string {
	if strings.HasPrefix(id, generatedIDPrefix) {
		return ""
	}
	return id
}

// skipSignature is the placeholder thought signature Google documents for
// calls whose signature is unknown.
func skipSignature() []byte {
	b, _ := base64.RawURLEncoding.DecodeString("skip_thought_signature_validator")
	return b
}

// isRefusal reports whether a finish reason says the model declined to
// answer.
func isRefusal(r genai.FinishReason) bool {
	switch r {
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonLanguage:
		return true
	}
	return false
}

// response translates the API's answer.
func (m *model) response(r *genai.GenerateContentResponse) (*llm.Response, error) {
	resp := &llm.Response{Model: r.ModelVersion}
	if u := r.UsageMetadata; u != nil {
		resp.Usage = llm.Usage{
			InputTokens: int(u.PromptTokenCount + u.ToolUsePromptTokenCount),
			// Thinking is billed as output.
			OutputTokens:      int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
			CachedInputTokens: int(u.CachedContentTokenCount),
		}
	}
	if fb := r.PromptFeedback; fb != nil && fb.BlockReason != "" {
		return nil, m.refused(fmt.Sprintf("the prompt was blocked (%s)", fb.BlockReason))
	}
	if len(r.Candidates) == 0 {
		return nil, m.refused("empty answer (no candidates)")
	}
	cand := r.Candidates[0]
	resp.StopReason = string(cand.FinishReason)
	switch {
	case isRefusal(cand.FinishReason):
		return nil, m.refused(fmt.Sprintf("the model declined to answer (finish reason %s)", cand.FinishReason))
	case cand.FinishReason == genai.FinishReasonMalformedFunctionCall || cand.FinishReason == genai.FinishReasonUnexpectedToolCall:
		return nil, &llm.Error{Class: llm.ErrUnparseable, Provider: llm.ProviderGemini,
			Message: fmt.Sprintf("the model made a broken tool call (finish reason %s)", cand.FinishReason)}
	}
	var text strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p.Thought:
			case p.FunctionCall != nil:
				tc, err := toolCall(p.FunctionCall)
				if err != nil {
					return nil, err
				}
				if p.ThoughtSignature != nil {
					m.signatures.put(tc.ID, p.ThoughtSignature)
				}
				resp.ToolCalls = append(resp.ToolCalls, tc)
			default:
				text.WriteString(p.Text)
			}
		}
	}
	resp.Text = text.String()
	if strings.TrimSpace(resp.Text) == "" && len(resp.ToolCalls) == 0 {
		return nil, m.refused(fmt.Sprintf("empty answer (finish reason %q)", cand.FinishReason))
	}
	return resp, nil
}

func toolCall(fc *genai.FunctionCall) (llm.ToolCall, error) {
	args := json.RawMessage(`{}`)
	if fc.Args != nil {
		b, err := json.Marshal(fc.Args)
		if err != nil {
			return llm.ToolCall{}, &llm.Error{Class: llm.ErrUnparseable, Provider: llm.ProviderGemini,
				Message: fmt.Sprintf("the arguments of the %s tool call cannot be encoded", fc.Name)}
		}
		args = b
	}
	id := fc.ID
	if id == "" {
		id = generatedIDPrefix + rand.Text()
	}
	return llm.ToolCall{ID: id, Name: fc.Name, Arguments: args}, nil
}

func (m *model) refused(msg string) error {
	return &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderGemini, Message: msg}
}
