package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// params translates req into a Messages request.
func (m *model) params(req *llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.name),
		MaxTokens: defaultMaxTokens,
	}
	switch {
	case req.MaxOutputTokens > 0:
		p.MaxTokens = int64(req.MaxOutputTokens)
	case m.maxTokens > 0:
		p.MaxTokens = int64(m.maxTokens)
	}
	switch {
	case req.Temperature != nil:
		p.Temperature = sdk.Float(*req.Temperature)
	case m.temperature != nil:
		p.Temperature = sdk.Float(*m.temperature)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "any":
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		case "none":
			none := sdk.NewToolChoiceNoneParam()
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &none}
		default:
			return p, fmt.Errorf("unknown tool choice %q", req.ToolChoice)
		}
	}
	return p, nil
}

// message translates one llm message. In a user message the tool_result
// blocks come first, as the API requires.
func message(msg llm.Message) (sdk.MessageParam, error) {
	var results, blocks []sdk.ContentBlockParamUnion
	for _, part := range msg.Parts {
		switch {
		case part.Text != "":
			blocks = append(blocks, sdk.NewTextBlock(part.Text))
		case part.Image != nil:
			blocks = append(blocks, sdk.NewImageBlockBase64(part.Image.MediaType, base64.StdEncoding.EncodeToString(part.Image.Data)))
		case part.ToolCall != nil:
			if msg.Role != llm.RoleAssistant {
				return sdk.MessageParam{}, fmt.Errorf("a tool call in a %s message", msg.Role)
			}
			args := part.ToolCall.Arguments
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage(`{}`)
			}
			blocks = append(blocks, sdk.NewToolUseBlock(part.ToolCall.ID, args, part.ToolCall.Name))
		case part.ToolResult != nil:
			if msg.Role != llm.RoleUser {
				return sdk.MessageParam{}, fmt.Errorf("a tool result in a %s message", msg.Role)
			}
			results = append(results, sdk.ContentBlockParamUnion{OfToolResult: toolResult(part.ToolResult)})
		}
	}
	blocks = append(results, blocks...)
	switch msg.Role {
	case llm.RoleUser:
		return sdk.NewUserMessage(blocks...), nil
	case llm.RoleAssistant:
		return sdk.NewAssistantMessage(blocks...), nil
	default:
		return sdk.MessageParam{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// toolResult is a tool_result block; its images travel inside it.
func toolResult(r *llm.ToolResult) *sdk.ToolResultBlockParam {
	b := &sdk.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError {
		b.IsError = sdk.Bool(true)
	}
	if r.Content != "" {
		b.Content = append(b.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: r.Content}})
	}
	for _, img := range r.Images {
		b.Content = append(b.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{
			Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(img.Data),
				MediaType: sdk.Base64ImageSourceMediaType(img.MediaType),
			}},
		}})
	}
	return b
}

// tool declares t; its JSON Schema is passed on as it is.
func tool(t llm.Tool) (*sdk.ToolParam, error) {
	schema := map[string]any{}
	if len(bytes.TrimSpace(t.InputSchema)) > 0 {
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
			return nil, fmt.Errorf("tool %s: the input schema is not a JSON object", t.Name)
		}
	}
	in := sdk.ToolInputSchemaParam{Properties: schema["properties"]}
	if in.Properties == nil {
		in.Properties = map[string]any{}
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	delete(schema, "type")
	delete(schema, "properties")
	delete(schema, "required")
	if len(schema) > 0 {
		in.ExtraFields = schema
	}
	p := &sdk.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		p.Description = sdk.String(t.Description)
	}
	return p, nil
}

// response translates the API's answer.
func response(msg *sdk.Message) (*llm.Response, error) {
	u := msg.Usage
	resp := &llm.Response{
		StopReason: string(msg.StopReason),
		Model:      string(msg.Model),
		Usage: llm.Usage{
			// input_tokens counts only what came after the last cache
			// breakpoint; llm.Usage counts every input token.
			InputTokens:       int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
			OutputTokens:      int(u.OutputTokens),
			CachedInputTokens: int(u.CacheReadInputTokens),
		},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if !isObject(b.Input) {
				return nil, &llm.Error{Class: llm.ErrUnparseable, Provider: llm.ProviderAnthropic,
					Message: fmt.Sprintf("the arguments of the %s tool call are not a JSON object", b.Name)}
			}
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
		}
	}
	resp.Text = text.String()
	if msg.StopReason == sdk.StopReasonRefusal {
		return nil, &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderAnthropic, Message: "the model declined to answer (stop reason refusal)"}
	}
	if strings.TrimSpace(resp.Text) == "" && len(resp.ToolCalls) == 0 {
		return nil, &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderAnthropic,
			Message: fmt.Sprintf("empty answer (stop reason %q)", msg.StopReason)}
	}
	return resp, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}
