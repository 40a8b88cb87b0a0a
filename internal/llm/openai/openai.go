// Package openai is the llm.Model of OpenAI's Chat Completions API, through
// OpenAI's official Go SDK. Chat Completions is the API that
// OpenAI-compatible servers speak (vLLM, Ollama, LM Studio, …), so a
// Settings.BaseURL such as http://localhost:11434/v1 makes a local model
// usable. The package translates an llm.Request into a chat completion
// request and the answer back, and classifies the API's errors into the llm
// error classes. It does not retry: llm.WithRetry does, from the outside.
package openai

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// DefaultModel is the model used when Settings.Model is empty.
const DefaultModel = "gpt-4.1"

const (
	defaultTimeout = 30 * time.Second
	defaultBaseURL = "https://api.openai.com/v1/"
)

// New returns the OpenAI model s describes: s.Model (default DefaultModel)
// at s.BaseURL (default OpenAI's API) with s.APIKey. s.Temperature and
// s.MaxOutputTokens apply when a request sets none; s.Headers are added to
// every request. Requests go through s.HTTPClient, or a client whose
// attempts last at most s.Timeout (default 30s). The SDK's own retries are
// off, and nothing is read from the environment (no OPENAI_* variable).
// Without an API key New fails, unless s.BaseURL names a compatible server:
// a local server needs no key, and gets none.
func New(s llm.Settings) (llm.Model, error) {
	if s.APIKey == "" && s.BaseURL == "" {
		return nil, &llm.Error{Class: llm.ErrAuth, Provider: llm.ProviderOpenAI,
			Message: "no API key is set (and no base URL of a compatible server)"}
	}
	name := s.Model
	if name == "" {
		name = DefaultModel
	}
	baseURL := s.BaseURL
	if baseURL == "" {
		baseURL = defaultBaseURL
	}
	client := s.HTTPClient
	if client == nil {
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = defaultTimeout
		}
		client = &http.Client{Timeout: timeout}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0),
	}
	if s.HTTPClient != nil && s.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(s.Timeout))
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	for k, v := range s.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &model{
		// The chat completion service alone, not openai.NewClient: the
		// client reads OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID and
		// more from the environment, which could send a key of the
		// environment to a server the caller named without one.
		completions: sdk.NewChatCompletionService(opts...),
		name:        name,
		apiKey:      s.APIKey,
		temperature: s.Temperature,
		maxTokens:   s.MaxOutputTokens,
	}, nil
}

type model struct {
	completions sdk.ChatCompletionService
	name        string
	apiKey      string
	temperature *float64
	maxTokens   int
}

// Provider is llm.ProviderOpenAI.
func (m *model) Provider() string { return llm.ProviderOpenAI }

// Name is the model's name.
func (m *model) Name() string { return m.name }

// Complete sends req to the Chat Completions API.
func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, &llm.Error{Class: llm.ErrInvalidRequest, Provider: llm.ProviderOpenAI, Message: err.Error()}
	}
	cc, err := m.completions.New(ctx, params)
	if err != nil {
		return nil, m.classify(ctx, err)
	}
	return response(cc)
}
