package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// params translates req into a chat completion request.
func (m *model) params(req *llm.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.name)}
	// max_completion_tokens, not the deprecated max_tokens that OpenAI's
	// reasoning models reject; compatible servers accept it or ignore it.
	switch {
	case req.MaxOutputTokens > 0:
		p.MaxCompletionTokens = sdk.Int(int64(req.MaxOutputTokens))
	case m.maxTokens > 0:
		p.MaxCompletionTokens = sdk.Int(int64(m.maxTokens))
	}
	switch {
	case req.Temperature != nil:
		p.Temperature = sdk.Float(*req.Temperature)
	case m.temperature != nil:
		p.Temperature = sdk.Float(*m.temperature)
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		mp, err := messages(msg)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp...)
	}
	for _, t := range req.Tools {
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			schema = nil
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
				return p, fmt.Errorf("tool %s: the input schema is not a JSON object", t.Name)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "any":
			p.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("required")}
		case "none":
			p.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("none")}
		default:
			return p, fmt.Errorf("unknown tool choice %q", req.ToolChoice)
		}
	}
	return p, nil
}

// messages translates one llm message. A user message with tool results
// becomes one "tool" message per result, then a user message with the
// results' images (tool messages hold text only) and the message's own
// text and images.
func messages(msg llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case llm.RoleAssistant:
		return assistant(msg)
	case llm.RoleUser:
	default:
		return nil, fmt.Errorf("unknown role %q", msg.Role)
	}
	var out []sdk.ChatCompletionMessageParamUnion
	var parts []sdk.ChatCompletionContentPartUnionParam
	var resultImages []sdk.ChatCompletionContentPartUnionParam
	for _, part := range msg.Parts {
		switch {
		case part.Text != "":
			parts = append(parts, sdk.TextContentPart(part.Text))
		case part.Image != nil:
			parts = append(parts, image(*part.Image))
		case part.ToolCall != nil:
			return nil, fmt.Errorf("a tool call in a user message")
		case part.ToolResult != nil:
			r := part.ToolResult
			content := r.Content
			if r.IsError {
				content = "[error] " + content
			}
			out = append(out, sdk.ToolMessage(content, r.CallID))
			if len(r.Images) > 0 {
				resultImages = append(resultImages, sdk.TextContentPart(
					fmt.Sprintf("Images from the result of %s (call %s):", r.Name, r.CallID)))
				for _, img := range r.Images {
					resultImages = append(resultImages, image(img))
				}
			}
		}
	}
	parts = append(resultImages, parts...)
	switch {
	case len(parts) == 0:
	case len(parts) == 1 && parts[0].OfText != nil:
		// Plain text content: the form every compatible server reads.
		out = append(out, sdk.UserMessage(parts[0].OfText.Text))
	default:
		out = append(out, sdk.UserMessage(parts))
	}
	return out, nil
}

func assistant(msg llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var a sdk.ChatCompletionAssistantMessageParam
	var text strings.Builder
	for _, part := range msg.Parts {
		switch {
		case part.Text != "":
			text.WriteString(part.Text)
		case part.ToolCall != nil:
			args := string(bytes.TrimSpace(part.ToolCall.Arguments))
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: part.ToolCall.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      part.ToolCall.Name,
						Arguments: args,
					},
				},
			})
		case part.Image != nil:
			return nil, fmt.Errorf("an image in an assistant message")
		case part.ToolResult != nil:
			return nil, fmt.Errorf("a tool result in an assistant message")
		}
	}
	if text.Len() > 0 {
		a.Content.OfString = sdk.String(text.String())
	}
	return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
}

// image is an image part with the image inline, as a data: URL.
func image(img llm.Image) sdk.ChatCompletionContentPartUnionParam {
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
		URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
	})
}

// response translates the API's answer.
func response(cc *sdk.ChatCompletion) (*llm.Response, error) {
	resp := &llm.Response{
		Model: cc.Model,
		Usage: llm.Usage{
			InputTokens:       int(cc.Usage.PromptTokens),
			OutputTokens:      int(cc.Usage.CompletionTokens),
			CachedInputTokens: int(cc.Usage.PromptTokensDetails.CachedTokens),
		},
	}
	if len(cc.Choices) == 0 {
		return nil, &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderOpenAI, Message: "empty answer (no choices)"}
	}
	choice := cc.Choices[0]
	resp.StopReason = choice.FinishReason
	if choice.Message.Refusal != "" || choice.FinishReason == "content_filter" {
		return nil, &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderOpenAI,
			Message: fmt.Sprintf("the model declined to answer (finish reason %q)", choice.FinishReason)}
	}
	resp.Text = choice.Message.Content
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args := json.RawMessage(bytes.TrimSpace([]byte(tc.Function.Arguments)))
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		if !isObject(args) {
			return nil, &llm.Error{Class: llm.ErrUnparseable, Provider: llm.ProviderOpenAI,
				Message: fmt.Sprintf("the arguments of the %s tool call are not a JSON object", tc.Function.Name)}
		}
		id := tc.ID
		if id == "" {
			// Some compatible servers send calls without IDs.
			id = newCallID()
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	if strings.TrimSpace(resp.Text) == "" && len(resp.ToolCalls) == 0 {
		return nil, &llm.Error{Class: llm.ErrRefused, Provider: llm.ProviderOpenAI,
			Message: fmt.Sprintf("empty answer (finish reason %q)", choice.FinishReason)}
	}
	return resp, nil
}

// newCallID generates a tool call ID.
func newCallID() string {
	return "call_" + rand.Text()
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}
