package tools

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An MCP server's answer is read up to maxMCPResponse bytes and no
// further: a longer one fails the read instead of filling the worker's
// memory.
func TestCappedBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int
		ok   bool
	}{
		{"small", 1 << 10, true},
		{"exactly the limit", maxMCPResponse, true},
		{"one byte over", maxMCPResponse + 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))), left: maxMCPResponse}
			n, err := io.Copy(io.Discard, body)
			if tc.ok {
				require.NoError(t, err)
				require.EqualValues(t, tc.size, n)
			} else {
				require.ErrorIs(t, err, errMCPResponseTooLarge)
				require.EqualValues(t, maxMCPResponse, n)
			}
		})
	}
}
