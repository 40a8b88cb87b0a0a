// Package gemini is the llm.Model of Google's Gemini API (the Gemini
// Developer API backend, not Vertex AI), through Google's official Go SDK
// (google.golang.org/genai). It translates an llm.Request into a
// generateContent request and the answer back, and classifies the API's
// errors into the llm error classes. It does not retry: llm.WithRetry does,
// from the outside.
//
// Gemini has no IDs for tool calls; the package generates them, and pairs
// results with calls by name as the API does. The thought signatures that
// Gemini's thinking models attach to tool calls, and want back with them,
// are kept per model (a bounded cache by call ID).
package gemini

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/genai"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// DefaultModel is the model used when Settings.Model is empty.
const DefaultModel = "gemini-2.5-flash"

const (
	defaultTimeout = 30 * time.Second
	defaultBaseURL = "https://generativelanguage.googleapis.com/"
	// placeholderKey satisfies the SDK, which insists on a key, when the
	// caller named a compatible server and gave none.
	placeholderKey = "no-key"
)

// New returns the Gemini model s describes: s.Model (default DefaultModel)
// at s.BaseURL (default the Gemini API) with s.APIKey. s.Temperature and
// s.MaxOutputTokens apply when a request sets none; s.Headers are added to
// every request. Requests go through s.HTTPClient, or a client whose
// attempts last at most s.Timeout (default 30s). The SDK retries nothing
// (no retry options are set), and neither the key nor the base URL is read
// from the environment. Without an API key New fails, unless s.BaseURL
// names a compatible server, which then gets a placeholder key.
func New(s llm.Settings) (llm.Model, error) {
	if s.APIKey == "" && s.BaseURL == "" {
		return nil, &llm.Error{Class: llm.ErrAuth, Provider: llm.ProviderGemini,
			Message: "no API key is set (and no base URL of a compatible server)"}
	}
	name := s.Model
	if name == "" {
		name = DefaultModel
	}
	key := s.APIKey
	if key == "" {
		key = placeholderKey
	}
	opts := genai.HTTPOptions{BaseURL: s.BaseURL}
	if opts.BaseURL == "" {
		// Explicit, so that GOOGLE_GEMINI_BASE_URL cannot redirect the key.
		opts.BaseURL = defaultBaseURL
	}
	if len(s.Headers) > 0 {
		opts.Headers = http.Header{}
		for k, v := range s.Headers {
			opts.Headers.Set(k, v)
		}
	}
	client := s.HTTPClient
	if client == nil {
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = defaultTimeout
		}
		client = &http.Client{Timeout: timeout}
	} else if s.Timeout > 0 {
		opts.Timeout = &s.Timeout
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  client,
		HTTPOptions: opts,
	})
	if err != nil {
		// The SDK's message may print the whole config, key included.
		return nil, &llm.Error{Class: llm.ErrInvalidRequest, Provider: llm.ProviderGemini,
			Message: "the Gemini client cannot be set up with these settings"}
	}
	return &model{
		models:      c.Models,
		name:        name,
		apiKey:      s.APIKey,
		temperature: s.Temperature,
		maxTokens:   s.MaxOutputTokens,
		signatures:  newSignatures(maxSignatures),
	}, nil
}

type model struct {
	models      *genai.Models
	name        string
	apiKey      string
	temperature *float64
	maxTokens   int
	signatures  *signatures
}

// Provider is llm.ProviderGemini.
func (m *model) Provider() string { return llm.ProviderGemini }

// Name is the model's name.
func (m *model) Name() string { return m.name }

// Complete sends req to the generateContent method.
func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	contents, config, err := m.request(req)
	if err != nil {
		return nil, &llm.Error{Class: llm.ErrInvalidRequest, Provider: llm.ProviderGemini, Message: err.Error()}
	}
	resp, err := m.models.GenerateContent(ctx, m.name, contents, config)
	if err != nil {
		return nil, m.classify(ctx, err)
	}
	return m.response(resp)
}
