package bench

import (
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// DefaultEncoding is the tokenizer both sides are counted with: OpenAI's
// o200k_base (GPT-4o and later). No tokenizer of a model Wayfinder will
// call is published for offline use; o200k_base is the closest public
// stand-in, and the comparison only needs one tokenizer used for both.
const DefaultEncoding = "o200k_base"

// useOfflineRanks guards tiktoken-go's package-level loader, which it
// reads without a lock: set once, before the first encoding is built, and
// never the downloading default.
var useOfflineRanks sync.Once

// Tokenizer counts tokens offline: the BPE ranks are embedded in the
// binary (tiktoken-go-loader), nothing is downloaded.
type Tokenizer struct {
	name string
	enc  *tiktoken.Tiktoken
}

// NewTokenizer returns a tokenizer for encoding (cl100k_base, o200k_base,
// p50k_base or r50k_base); "" means DefaultEncoding.
func NewTokenizer(encoding string) (*Tokenizer, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	useOfflineRanks.Do(func() { tiktoken.SetBpeLoader(loader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", encoding, err)
	}
	return &Tokenizer{name: encoding, enc: enc}, nil
}

// Name is the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// Count returns the number of tokens of s. Special tokens in s are counted
// as ordinary text, as a model API would.
func (t *Tokenizer) Count(s string) int {
	return len(t.enc.EncodeOrdinary(s))
}
