// Package anthropic is the llm.Model of Anthropic's Messages API, through
// Anthropic's official Go SDK. It translates an llm.Request into a Messages
// request and the answer back, and classifies the API's errors into the llm
// error classes. It does not retry: llm.WithRetry does, from the outside.
package anthropic

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// DefaultModel is the model used when Settings.Model is empty.
const DefaultModel = "claude-sonnet-4-5"

const (
	// defaultMaxTokens is max_tokens when neither the request nor the
	// settings bound the answer: the Messages API requires a value.
	defaultMaxTokens = 4096
	defaultTimeout   = 30 * time.Second
	// sdkTimeout bounds an attempt made with a caller's HTTPClient and no
	// Timeout: the SDK's own default for non-streaming calls. Setting one
	// also keeps the SDK from refusing large max_tokens without streaming.
	sdkTimeout     = 10 * time.Minute
	defaultBaseURL = "https://api.anthropic.com/"
)

// New returns the Anthropic model s describes: s.Model (default
// DefaultModel) at s.BaseURL (default Anthropic's API) with s.APIKey.
// s.Temperature and s.MaxOutputTokens (default 4096) apply when a request
// sets none; s.Headers are added to every request. Requests go through
// s.HTTPClient, or a client whose attempts last at most s.Timeout (default
// 30s). The SDK's own retries are off, and nothing is read from the
// environment. Without an API key New fails, unless s.BaseURL names a
// compatible server (which then gets no key).
func New(s llm.Settings) (llm.Model, error) {
	if s.APIKey == "" && s.BaseURL == "" {
		return nil, &llm.Error{Class: llm.ErrAuth, Provider: llm.ProviderAnthropic,
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
	client, timeout := s.HTTPClient, s.Timeout
	if client == nil {
		if timeout <= 0 {
			timeout = defaultTimeout
		}
		client = &http.Client{Timeout: timeout}
	} else if timeout <= 0 {
		timeout = sdkTimeout
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(timeout),
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	for k, v := range s.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &model{
		messages:    sdk.NewClient(opts...).Messages,
		name:        name,
		apiKey:      s.APIKey,
		temperature: s.Temperature,
		maxTokens:   s.MaxOutputTokens,
	}, nil
}

type model struct {
	messages    sdk.MessageService
	name        string
	apiKey      string
	temperature *float64
	maxTokens   int
}

// Provider is llm.ProviderAnthropic.
func (m *model) Provider() string { return llm.ProviderAnthropic }

// Name is the model's name.
func (m *model) Name() string { return m.name }

// Complete sends req to the Messages API.
func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, &llm.Error{Class: llm.ErrInvalidRequest, Provider: llm.ProviderAnthropic, Message: err.Error()}
	}
	msg, err := m.messages.New(ctx, params)
	if err != nil {
		return nil, m.classify(ctx, err)
	}
	return response(msg)
}
