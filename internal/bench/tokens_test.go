package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenizer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		encoding, text string
		want           int
	}{
		// Reference counts from OpenAI's tiktoken.
		{"o200k_base", "hello world", 2},
		{"cl100k_base", "hello world", 2},
		{"o200k_base", "", 0},
		// Special tokens in page text are ordinary text to a model API.
		{"o200k_base", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		t.Run(tt.encoding+"/"+tt.text, func(t *testing.T) {
			t.Parallel()
			tok, err := NewTokenizer(tt.encoding)
			require.NoError(t, err)
			require.Equal(t, tt.encoding, tok.Name())
			require.Equal(t, tt.want, tok.Count(tt.text))
		})
	}
}

func TestTokenizerDefaultAndUnknown(t *testing.T) {
	t.Parallel()
	tok, err := NewTokenizer("")
	require.NoError(t, err)
	require.Equal(t, DefaultEncoding, tok.Name())
	// A longer text tokenizes to far fewer tokens than characters.
	text := `- button "Save draft" [ref=e42]`
	n := tok.Count(text)
	require.Greater(t, n, 5)
	require.Less(t, n, len(text))

	_, err = NewTokenizer("no_such_base")
	require.Error(t, err)
}
