package llm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// million is one million input tokens: its cost is the input price.
var million = llm.Usage{InputTokens: 1_000_000}

func TestDefaultPricesCost(t *testing.T) {
	t.Parallel()
	prices := llm.DefaultPrices()

	tests := []struct {
		provider, model string
		usage           llm.Usage
		want            float64
		known           bool
	}{
		{"anthropic", "claude-sonnet-4-5", million, 3, true},
		{"anthropic", "claude-sonnet-4-5-20250929", million, 3, true},
		{"anthropic", "claude-sonnet-4-5@20250929", million, 3, true},
		{"anthropic", "claude-opus-4-1", llm.Usage{OutputTokens: 1_000_000}, 75, true},
		{"anthropic", "claude-opus-4-1-20250805", million, 15, true},
		{"anthropic", "claude-haiku-4-5", million, 1, true},
		{"openai", "gpt-4.1", million, 2, true},
		{"openai", "gpt-4.1-2025-04-14", million, 2, true},
		{"openai", "gpt-4.1-mini", million, 0.4, true},
		{"openai", "gpt-4.1-mini-2025-04-14", million, 0.4, true},
		{"openai", "gpt-4o", million, 2.5, true},
		{"openai", "gpt-4o-mini", million, 0.15, true},
		{"openai", "gpt-4o-mini-2024-07-18", million, 0.15, true},
		{"openai", "o4-mini", million, 1.1, true},
		{"openai", "o4-mini-2025-04-16", million, 1.1, true},
		{"gemini", "gemini-2.5-pro", million, 1.25, true},
		{"gemini", "gemini-2.5-flash", million, 0.3, true},
		{"gemini", "models/gemini-2.5-flash", million, 0.3, true},
		{"gemini", "gemini-2.5-flash-lite", million, 0.1, true},
		{"gemini", "gemini-2.5-flash-lite-preview-06-17", million, 0.1, true},
		{"gemini", "GEMINI-2.5-PRO", million, 1.25, true},
		// A prefix must end at a separator: "gpt-4o" is not "gpt-4oo".
		{"openai", "gpt-4oo", million, 0, false},
		{"openai", "llama3.1:8b", million, 0, false},
		{"anthropic", "gpt-4o", million, 0, false},
		{"nobody", "gpt-4o", million, 0, false},
		{"steps", "steps", million, 0, true},
		{"scripted", "anything", million, 0, true},
		{"prompt_runner", "gpt-4o", million, 0, true},
		// Cached tokens are part of InputTokens and billed at the cached rate:
		// 600k fresh × $3 + 400k cached × $0.30 + 100k out × $15.
		{"anthropic", "claude-sonnet-4-5", llm.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 100_000}, 1.8 + 0.12 + 1.5, true},
		// More cached than input (a confused provider) never bills negative input.
		{"openai", "gpt-4.1", llm.Usage{InputTokens: 100, CachedInputTokens: 1_000_000}, 100 * 0.5 / 1e6, true},
		{"openai", "gpt-4.1", llm.Usage{}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			got, known := prices.Cost(tt.provider, tt.model, tt.usage)
			require.Equal(t, tt.known, known)
			require.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

func TestDefaultPricesShared(t *testing.T) {
	t.Parallel()
	require.Same(t, llm.DefaultPrices(), llm.DefaultPrices())
}

func TestLoadPrices(t *testing.T) {
	t.Parallel()

	write := func(t *testing.T, body string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "prices.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}

	t.Run("merged over the defaults", func(t *testing.T) {
		t.Parallel()
		path := write(t, `{
			"openai": {
				"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2, "cached_input_per_mtok": 0.5},
				"llama3.1": {"input_per_mtok": 0.05, "output_per_mtok": 0.1}
			},
			"steps": {"steps": {"input_per_mtok": 0.01, "output_per_mtok": 0}}
		}`)
		prices, err := llm.LoadPrices(path)
		require.NoError(t, err)

		cost := func(provider, model string, u llm.Usage) float64 {
			t.Helper()
			usd, known := prices.Cost(provider, model, u)
			require.True(t, known, "%s/%s", provider, model)
			return usd
		}
		require.InDelta(t, 1, cost("openai", "gpt-4o", million), 1e-9, "replaced")
		require.InDelta(t, 0.5, cost("openai", "gpt-4o", llm.Usage{InputTokens: 1_000_000, CachedInputTokens: 1_000_000}), 1e-9)
		require.InDelta(t, 0.15, cost("openai", "gpt-4o-mini", million), 1e-9, "default kept")
		require.InDelta(t, 3, cost("anthropic", "claude-sonnet-4-5", million), 1e-9, "other providers kept")
		require.InDelta(t, 0.05, cost("openai", "llama3.1:8b", million), 1e-9, "added, by prefix")
		require.InDelta(t, 0.05, cost("openai", "llama3.1", llm.Usage{InputTokens: 1_000_000, CachedInputTokens: 1_000_000}), 1e-9,
			"cached rate defaults to the input rate")
		require.InDelta(t, 0.01, cost("steps", "steps", million), 1e-9, "a listed unpriced provider")

		usd, known := llm.DefaultPrices().Cost("openai", "gpt-4o", million)
		require.True(t, known)
		require.InDelta(t, 2.5, usd, 1e-9, "the defaults are not changed by a load")
	})

	t.Run("empty path is the defaults", func(t *testing.T) {
		t.Parallel()
		prices, err := llm.LoadPrices("")
		require.NoError(t, err)
		require.Same(t, llm.DefaultPrices(), prices)
	})

	bad := []struct {
		name, body, want string
	}{
		{"empty", ``, "empty file"},
		{"not JSON", `input: 3`, "not a price table"},
		{"wrong shape", `{"openai": {"gpt-4o": 3}}`, "not a price table"},
		{"unknown field", `{"openai": {"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2, "cache_read": 1}}}`, "cache_read"},
		{"unknown provider", `{"openia": {"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2}}}`, `unknown provider "openia"`},
		{"missing output", `{"openai": {"gpt-4o": {"input_per_mtok": 1}}}`, "openai/gpt-4o: input_per_mtok and output_per_mtok are required"},
		{"negative", `{"openai": {"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": -2}}}`, "openai/gpt-4o: negative price"},
		{"empty model", `{"openai": {" ": {"input_per_mtok": 1, "output_per_mtok": 2}}}`, "openai: empty model name"},
		{"trailing data", `{} {}`, "data after the price table"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := write(t, tt.body)
			prices, err := llm.LoadPrices(path)
			require.Nil(t, prices)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tt.want)
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := llm.LoadPrices(filepath.Join(t.TempDir(), "nope.json"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}
