package pool

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// browser's watchers, event relays and background closes must end with
// Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
