package llm

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	// InputPerMTok prices input tokens not served from the prompt cache.
	InputPerMTok float64 `json:"input_per_mtok"`
	// OutputPerMTok prices output tokens (reasoning tokens included).
	OutputPerMTok float64 `json:"output_per_mtok"`
	// CachedInputPerMTok prices input tokens read from the prompt cache.
	CachedInputPerMTok float64 `json:"cached_input_per_mtok"`
}

// Prices is a price table by provider and model. It is immutable once
// loaded, so one table can be shared by every run.
//
// The table file is a JSON object of providers, each an object of models:
//
//	{"anthropic": {"claude-sonnet-4-5": {"input_per_mtok": 3, "output_per_mtok": 15, "cached_input_per_mtok": 0.3}}}
//
// input_per_mtok and output_per_mtok are required; cached_input_per_mtok
// defaults to the input price. The default table (prices.json, embedded)
// lists the vendors' list prices for prompts under 200k tokens; prompt-cache
// writes, long-context tiers and batch discounts are not modelled.
type Prices struct {
	byProvider map[string]map[string]Price
}

//go:embed prices.json
var defaultPricesJSON []byte

var defaultPrices = sync.OnceValue(func() *Prices {
	table, err := parsePrices(bytes.NewReader(defaultPricesJSON))
	if err != nil {
		panic("llm: embedded prices.json: " + err.Error())
	}
	return &Prices{byProvider: table}
})

// DefaultPrices is the embedded price table of the vendors' current models.
func DefaultPrices() *Prices { return defaultPrices() }

// LoadPrices reads a price table file (the format of Prices) and merges it
// over the defaults: a model it lists replaces the default entry of that
// name, other defaults stay. An empty path returns DefaultPrices.
func LoadPrices(path string) (*Prices, error) {
	if path == "" {
		return DefaultPrices(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	defer f.Close()
	table, err := parsePrices(f)
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", path, err)
	}
	merged := make(map[string]map[string]Price)
	for provider, models := range DefaultPrices().byProvider {
		merged[provider] = maps.Clone(models)
	}
	for provider, models := range table {
		if merged[provider] == nil {
			merged[provider] = make(map[string]Price)
		}
		maps.Copy(merged[provider], models)
	}
	return &Prices{byProvider: merged}, nil
}

// priceEntry is a Price as written in a file: pointers tell a missing price
// from a free one.
type priceEntry struct {
	Input       *float64 `json:"input_per_mtok"`
	Output      *float64 `json:"output_per_mtok"`
	CachedInput *float64 `json:"cached_input_per_mtok"`
}

func parsePrices(r io.Reader) (map[string]map[string]Price, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var raw map[string]map[string]priceEntry
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, fmt.Errorf("not a price table (want {provider: {model: {input_per_mtok, output_per_mtok, cached_input_per_mtok}}}): %w", err)
	}
	if dec.More() {
		return nil, errors.New("data after the price table")
	}
	table := make(map[string]map[string]Price, len(raw))
	for provider, models := range raw {
		if !knownProvider(provider) {
			return nil, fmt.Errorf("unknown provider %q (want one of %s)", provider, strings.Join(providerNames(), ", "))
		}
		table[provider] = make(map[string]Price, len(models))
		for model, e := range models {
			name := normalizeModel(model)
			if name == "" {
				return nil, fmt.Errorf("%s: empty model name", provider)
			}
			if e.Input == nil || e.Output == nil {
				return nil, fmt.Errorf("%s/%s: input_per_mtok and output_per_mtok are required", provider, model)
			}
			p := Price{InputPerMTok: *e.Input, OutputPerMTok: *e.Output, CachedInputPerMTok: *e.Input}
			if e.CachedInput != nil {
				p.CachedInputPerMTok = *e.CachedInput
			}
			if p.InputPerMTok < 0 || p.OutputPerMTok < 0 || p.CachedInputPerMTok < 0 {
				return nil, fmt.Errorf("%s/%s: negative price", provider, model)
			}
			table[provider][name] = p
		}
	}
	return table, nil
}

func providerNames() []string {
	return []string{ProviderAnthropic, ProviderOpenAI, ProviderGemini, ProviderPromptRunner, ProviderSteps, ProviderScripted}
}

func knownProvider(name string) bool { return slices.Contains(providerNames(), name) }

// unpriced providers cost nothing unless the table lists their model: the
// offline controller and scripts call no vendor, and a prompt runner's host
// pays its own model bill.
func unpriced(provider string) bool {
	return provider == ProviderSteps || provider == ProviderScripted || provider == ProviderPromptRunner
}

// normalizeModel lower-cases a model name and drops a path prefix
// ("models/gemini-2.5-flash", "openai/gpt-4o").
func normalizeModel(model string) string {
	model = strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	return model
}

// lookup returns the price of provider's model: the entry of that exact
// name, else the entry whose name is the longest prefix of it followed by
// '-', '@' or ':' (so "claude-sonnet-4-5-20250929" and
// "claude-sonnet-4-5@20250929" cost what "claude-sonnet-4-5" does, and
// "gpt-4o-mini" never falls back to "gpt-4o" while it is listed).
func (p *Prices) lookup(provider, model string) (Price, bool) {
	models := p.byProvider[provider]
	name := normalizeModel(model)
	if price, ok := models[name]; ok {
		return price, true
	}
	best, found := "", false
	for listed := range models {
		if len(listed) <= len(best) || len(name) <= len(listed) || !strings.HasPrefix(name, listed) {
			continue
		}
		if strings.IndexByte("-@:", name[len(listed)]) >= 0 {
			best, found = listed, true
		}
	}
	return models[best], found
}

// Cost is what one call's usage costs in USD. known is false when the table
// has no price for the model (usd is then 0); the offline step controller,
// the scripted model and the prompt runner cost 0 (known) unless listed.
// Cached input tokens, which Usage counts within InputTokens, are billed at
// the cached rate.
func (p *Prices) Cost(provider, model string, u Usage) (usd float64, known bool) {
	price, ok := p.lookup(provider, model)
	if !ok {
		return 0, unpriced(provider)
	}
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	fresh := max(u.InputTokens, 0) - cached
	usd = float64(fresh)*price.InputPerMTok +
		float64(cached)*price.CachedInputPerMTok +
		float64(max(u.OutputTokens, 0))*price.OutputPerMTok
	return usd / 1e6, true
}
