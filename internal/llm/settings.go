package llm

import (
	"net/http"
	"time"
)

// Provider names.
const (
	ProviderAnthropic    = "anthropic"
	ProviderOpenAI       = "openai"
	ProviderGemini       = "gemini"
	ProviderPromptRunner = "prompt_runner"
	ProviderSteps        = "steps"
	ProviderScripted     = "scripted"
)

// Settings choose and configure one model.
type Settings struct {
	// Provider is one of the Provider* names.
	Provider string
	// Model is the vendor's model name; each provider has a default.
	Model string
	// BaseURL points the SDK at a compatible server (a local vLLM, Ollama
	// or LM Studio for OpenAI; a proxy or a test server for any). Empty:
	// the vendor's API.
	BaseURL string
	// APIKey authenticates with the vendor. It is never logged or recorded.
	APIKey string
	// Temperature; provider default when nil.
	Temperature *float64
	// MaxOutputTokens per call; provider default when zero.
	MaxOutputTokens int
	// Headers are extra request headers (the prompt-runner webhook's).
	Headers map[string]string
	// URL is the prompt-runner webhook's endpoint.
	URL string
	// Goal is the run's goal: the offline step controller's script.
	Goal string
	// RunID is the run the model is built for; empty when the models are
	// only built to validate a run's settings (CreateRun).
	RunID string
	// HTTPClient makes the requests; nil uses a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt when HTTPClient is nil. Default 30s.
	Timeout time.Duration
}
