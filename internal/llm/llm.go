// Package llm is Wayfinder's one view of a language model: a provider-neutral
// conversation (Request, Message, Part), the answer (Response with tool calls
// and Usage), and the Model interface every provider implements: the vendors'
// official SDKs (Anthropic, OpenAI and OpenAI-compatible servers, Google
// Gemini), the prompt-runner webhook, the offline step controller and the
// scripted model of tests. Retries, timeouts and cost accounting wrap a Model
// from the outside (Retry, Prices), so providers stay thin translations.
//
// The package knows nothing about browsers, runs or storage.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Model answers one conversation turn.
type Model interface {
	// Complete sends req and returns the model's answer. Errors wrap one
	// of ErrTransient, ErrRateLimited, ErrInvalidRequest, ErrAuth,
	// ErrRefused or ErrUnparseable so callers can decide what to retry;
	// ctx's error is returned as is.
	Complete(ctx context.Context, req *Request) (*Response, error)
	// Provider names the provider ("anthropic", "openai", "gemini",
	// "prompt_runner", "steps", "scripted").
	Provider() string
	// Name is the model's name as the provider knows it.
	Name() string
}

// Request is one call: a system prompt, the conversation so far and the
// tools the model may call.
type Request struct {
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// ToolChoice: "" (auto: the model may answer in text), "any" (the
	// model must call a tool) or "none".
	ToolChoice string `json:"tool_choice,omitempty"`
	// Temperature; provider default when nil.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxOutputTokens bounds the answer; provider default (or 4096 where
	// the API requires a value) when zero.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// Observation is a structured view of the page the conversation is
	// about, for models that work on structure instead of text (the
	// offline step controller). Providers that talk to a vendor ignore it;
	// it is never sent anywhere.
	Observation *Observation `json:"-"`
}

// Role is who a message is from.
type Role string

// Message roles. Tool results travel in user messages (as the Anthropic API
// has them); providers that want a separate tool role split them out.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a message: exactly one of its fields is set.
type Part struct {
	Text       string      `json:"text,omitempty"`
	Image      *Image      `json:"image,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

// Image is an image shown to the model.
type Image struct {
	// MediaType is "image/png" or "image/jpeg".
	MediaType string `json:"media_type"`
	// Data is the encoded image. It is left out of JSON: records name
	// images by Ref instead of repeating their bytes.
	Data []byte `json:"-"`
	// Ref identifies the image in records (a media ID or a content hash).
	Ref string `json:"ref,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the JSON Schema (an object schema) of the arguments.
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	// ID pairs the call with its ToolResult; providers that have no IDs
	// get generated ones.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is a JSON object.
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult answers a ToolCall.
type ToolResult struct {
	CallID string `json:"call_id"`
	// Name repeats the tool's name (Gemini pairs results by name).
	Name string `json:"name"`
	// Content is the result as text, usually JSON.
	Content string `json:"content"`
	// IsError marks a failed call.
	IsError bool `json:"is_error,omitempty"`
	// Images attached to the result (a screenshot after an action).
	// Providers that cannot attach images to tool results add them as
	// user image parts right after the result.
	Images []Image `json:"images,omitempty"`
}

// Response is the model's answer.
type Response struct {
	// Text is the answer's text (reasoning, or the whole answer when no
	// tool is called).
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason as the provider reports it ("end_turn", "tool_use",
	// "stop", "length", …).
	StopReason string `json:"stop_reason,omitempty"`
	Usage      Usage  `json:"usage"`
	// Model is the model that answered, when the provider says.
	Model string `json:"model,omitempty"`
}

// Usage counts tokens of one call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CachedInputTokens are input tokens served from the provider's
	// prompt cache (already included in InputTokens).
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Observation is the structured page a conversation is about.
type Observation struct {
	// Goal is the run's goal.
	Goal  string `json:"goal"`
	URL   string `json:"url"`
	Title string `json:"title"`
	// Elements are the snapshot's listed elements.
	Elements []ObservedElement `json:"elements"`
	// Text is the page's visible text (possibly truncated).
	Text string `json:"text,omitempty"`
	// SnapshotID names the snapshot the refs belong to.
	SnapshotID string `json:"snapshot_id,omitempty"`
}

// ObservedElement is one element of an Observation.
type ObservedElement struct {
	Ref     string   `json:"ref"`
	Role    string   `json:"role"`
	Name    string   `json:"name"`
	Value   string   `json:"value,omitempty"`
	State   []string `json:"state,omitempty"`
	Options []string `json:"options,omitempty"`
	Context string   `json:"context,omitempty"`
	Hint    string   `json:"hint,omitempty"`
}

// Error classes. Providers wrap one of them (with fmt.Errorf("…: %w", …) or
// an *Error) so the caller can decide what to do without knowing the vendor.
var (
	// ErrTransient: a network error, a 5xx, an overloaded server or a
	// timeout of one attempt; retry with backoff.
	ErrTransient = errors.New("model temporarily unavailable")
	// ErrRateLimited: the provider refused for rate or quota (429); retry
	// after RetryAfter when the provider said.
	ErrRateLimited = errors.New("model rate limited")
	// ErrInvalidRequest: the provider rejected the request (4xx other than
	// 401/403/429); retrying the same request is pointless.
	ErrInvalidRequest = errors.New("model rejected the request")
	// ErrAuth: the API key is missing, wrong or lacks permission.
	ErrAuth = errors.New("model authentication failed")
	// ErrRefused: the model declined to answer (safety stop, empty answer).
	ErrRefused = errors.New("model refused")
	// ErrUnparseable: the answer could not be understood (malformed tool
	// arguments, missing verdict); re-prompt.
	ErrUnparseable = errors.New("model answer unparseable")
)

// Error is a classified provider error.
type Error struct {
	// Class is one of the Err* values above.
	Class error
	// Provider that failed.
	Provider string
	// Status is the HTTP status, 0 when there was none.
	Status int
	// Message says what happened, without request contents or keys.
	Message string
	// RetryAfter is the wait the provider asked for, 0 when it did not.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: %v (HTTP %d): %s", e.Provider, e.Class, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %v: %s", e.Provider, e.Class, e.Message)
}

// Unwrap returns the error's class.
func (e *Error) Unwrap() error { return e.Class }

// Retryable reports whether err is worth another attempt of the same
// request.
func Retryable(err error) bool {
	return errors.Is(err, ErrTransient) || errors.Is(err, ErrRateLimited)
}
