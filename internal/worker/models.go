package worker

import (
	"errors"
	"fmt"
	"net/http"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/anthropic"
	"github.com/wayfinder/wayfinder/internal/llm/gemini"
	"github.com/wayfinder/wayfinder/internal/llm/openai"
	"github.com/wayfinder/wayfinder/internal/llm/promptrunner"
	"github.com/wayfinder/wayfinder/internal/llm/steps"
)

// Models builds a run's controller and judge models from its parameters
// and the server's defaults. It is shared by the API (to refuse runs whose
// models cannot be built) and the workers.
type Models struct {
	// DefaultProvider is the provider of runs that name none: "auto"
	// (the first vendor with a key, else steps) or a provider name.
	DefaultProvider string
	// DefaultModel and JudgeModel name the default models; "" uses the
	// provider's default (and, for the judge, the controller's model).
	DefaultModel, JudgeModel string
	// APIKeys and BaseURLs are the server's, per provider. The server's key
	// is sent only to the vendor or to the server's base URL, never to a
	// base URL a run names.
	APIKeys, BaseURLs map[string]string
	// HTTPClient makes the calls to endpoints a run names (prompt-runner
	// webhooks, a run's base_url): egress-guarded. Calls to the vendors and
	// to the server's own base URLs use a plain client.
	HTTPClient *http.Client
	// Extra providers by name, for tests (a "scripted" provider).
	Extra map[string]func(llm.Settings) (llm.Model, error)
	// RunKeys are the API keys of the stored credentials a run names
	// (ModelSettings.api_key_credential), by credential name; see
	// WithRunKeys.
	RunKeys map[string]string
	// RunID, when set, is the run the models are built for (ForRun).
	RunID string
}

// WithRunKeys returns a copy of m that knows the API keys of one run's
// stored credentials, by credential name.
func (m *Models) WithRunKeys(keys map[string]string) *Models {
	c := *m
	c.RunKeys = keys
	return &c
}

// ForRun returns a copy of m that builds the models of run runID: the
// providers learn which run they serve (an MCP session's model serves
// only its own run).
func (m *Models) ForRun(runID string) *Models {
	c := *m
	c.RunID = runID
	return &c
}

// CredentialNames returns the credentials whose API keys a run's models
// use (controller and judge), without duplicates.
func CredentialNames(p *wfv1.RunParams) []string {
	var out []string
	for _, n := range []string{p.GetController().GetApiKeyCredential(), p.GetJudge().GetModel().GetApiKeyCredential()} {
		if n != "" && (len(out) == 0 || out[0] != n) {
			out = append(out, n)
		}
	}
	return out
}

// ErrNoModel: the run asks for a provider the server cannot use.
var ErrNoModel = errors.New("model unavailable")

var vendors = []string{llm.ProviderAnthropic, llm.ProviderOpenAI, llm.ProviderGemini}

// Provider resolves the provider of settings s ("" = the server's
// default).
func (m *Models) Provider(s *wfv1.ModelSettings) string {
	if p := s.GetProvider(); p != "" {
		return p
	}
	if m.DefaultProvider != "" && m.DefaultProvider != "auto" {
		return m.DefaultProvider
	}
	for _, v := range vendors {
		if m.APIKeys[v] != "" {
			return v
		}
	}
	return llm.ProviderSteps
}

// Known reports whether provider can be named by a run.
func (m *Models) Known(provider string) bool {
	switch provider {
	case llm.ProviderAnthropic, llm.ProviderOpenAI, llm.ProviderGemini, llm.ProviderSteps:
		return true
	}
	_, ok := m.Extra[provider]
	return ok
}

// Controller builds the run's controller model.
func (m *Models) Controller(p *wfv1.RunParams) (llm.Model, error) {
	s, err := m.settings(p, p.GetController(), m.DefaultModel)
	if err != nil {
		return nil, err
	}
	return m.build(s)
}

// Judge builds the run's LLM-judge model, or returns nil when the run's
// judge uses heuristics only (the heuristic strategy, or an offline
// controller with no judge model named).
func (m *Models) Judge(p *wfv1.RunParams) (llm.Model, error) {
	j := p.GetJudge()
	if j.GetStrategy() == wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC {
		return nil, nil
	}
	js := j.GetModel()
	if js.GetProvider() == "" {
		// The judge follows the controller's provider and model.
		base := &wfv1.ModelSettings{Provider: m.Provider(p.GetController()), Model: p.GetController().GetModel(),
			BaseUrl: p.GetController().GetBaseUrl(), ApiKeyCredential: p.GetController().GetApiKeyCredential()}
		if js != nil {
			base.Temperature, base.MaxOutputTokens, base.Prompt = js.Temperature, js.MaxOutputTokens, js.Prompt
			if js.GetModel() != "" {
				base.Model = js.GetModel()
			}
			if js.GetBaseUrl() != "" {
				base.BaseUrl = js.GetBaseUrl()
			}
			if js.GetApiKeyCredential() != "" {
				base.ApiKeyCredential = js.GetApiKeyCredential()
			}
		}
		js = base
	}
	provider := m.Provider(js)
	if provider == llm.ProviderSteps && p.GetPromptRunner() == nil {
		if j.GetStrategy() == wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM {
			return nil, fmt.Errorf("%w: the LLM judge needs a model provider (anthropic, openai or gemini), not steps", ErrNoModel)
		}
		return nil, nil
	}
	def := m.JudgeModel
	if def == "" {
		def = m.DefaultModel
	}
	s, err := m.settings(p, js, def)
	if err != nil {
		return nil, err
	}
	return m.build(s)
}

// settings resolves one role's settings.
func (m *Models) settings(p *wfv1.RunParams, ms *wfv1.ModelSettings, defaultModel string) (llm.Settings, error) {
	provider := m.Provider(ms)
	var temperature *float64
	if ms != nil {
		temperature = ms.Temperature
	}
	s := llm.Settings{
		Provider:        provider,
		Model:           ms.GetModel(),
		Temperature:     temperature,
		MaxOutputTokens: int(ms.GetMaxOutputTokens()),
		Goal:            p.GetGoal(),
		RunID:           m.RunID,
		HTTPClient:      m.HTTPClient,
	}
	if s.Model == "" && ms.GetProvider() == "" {
		s.Model = defaultModel // the server's default model goes with its default provider
	}
	if pr := p.GetPromptRunner(); pr != nil {
		// The host answers every prompt; the provider and model are hints.
		s.Provider, s.URL, s.Headers = llm.ProviderPromptRunner, pr.GetUrl(), pr.GetHeaders()
		if s.Model == "" {
			s.Model = provider
		}
		return s, nil
	}
	if !m.Known(provider) {
		return s, fmt.Errorf("%w: unknown provider %q", ErrNoModel, provider)
	}
	if cred := ms.GetApiKeyCredential(); cred != "" && provider != llm.ProviderSteps {
		// The run's own key (a stored credential) may go wherever the run
		// says; a base_url of the run's still goes through the egress guard.
		key, ok := m.RunKeys[cred]
		if !ok {
			return s, fmt.Errorf("%w: the API key of credential %q is not available", ErrNoModel, cred)
		}
		s.APIKey = key
		if base := ms.GetBaseUrl(); base != "" {
			s.BaseURL = base
		} else {
			s.BaseURL, s.HTTPClient = m.BaseURLs[provider], nil
		}
		return s, nil
	}
	switch base := ms.GetBaseUrl(); {
	case base != "" && base != m.BaseURLs[provider]:
		// A base URL of the run's own: the server's key stays home, and
		// the call goes through the egress guard like a webhook's.
		s.BaseURL = base
	default:
		s.BaseURL, s.APIKey, s.HTTPClient = m.BaseURLs[provider], m.APIKeys[provider], nil
	}
	if provider != llm.ProviderSteps && m.Extra[provider] == nil && s.APIKey == "" && s.BaseURL == "" {
		return s, fmt.Errorf("%w: provider %q has no API key on this server (set %s) and the run names no base_url", ErrNoModel, provider, keyEnv(provider))
	}
	return s, nil
}

func keyEnv(provider string) string {
	switch provider {
	case llm.ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	case llm.ProviderOpenAI:
		return "OPENAI_API_KEY"
	case llm.ProviderGemini:
		return "GEMINI_API_KEY"
	}
	return "its API key"
}

func (m *Models) build(s llm.Settings) (llm.Model, error) {
	var (
		model llm.Model
		err   error
	)
	switch s.Provider {
	case llm.ProviderAnthropic:
		model, err = anthropic.New(s)
	case llm.ProviderOpenAI:
		model, err = openai.New(s)
	case llm.ProviderGemini:
		model, err = gemini.New(s)
	case llm.ProviderSteps:
		model, err = steps.New(s)
	case llm.ProviderPromptRunner:
		model, err = promptrunner.New(s)
	default:
		f, ok := m.Extra[s.Provider]
		if !ok {
			return nil, fmt.Errorf("%w: unknown provider %q", ErrNoModel, s.Provider)
		}
		model, err = f(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoModel, s.Provider, err)
	}
	return model, nil
}
