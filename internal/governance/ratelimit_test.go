package governance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock that moves only when a wait "sleeps", recording the
// waits.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	waits  []time.Duration
	jitter float64
	// block, when set, makes sleeping fail with ctx's cause instead.
	block bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.block {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) limiter() *limiter {
	l := newLimiter()
	l.now, l.sleep = c.Now, c.sleep
	l.jitter = func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.jitter
	}
	return l
}

func TestLimiterSpacing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		rate   int
		jitter float64
		// waits of four back-to-back actions
		want []time.Duration
	}{
		{"no limit", 0, 0, []time.Duration{0, 0, 0, 0}},
		{"60 a minute", 60, 0, []time.Duration{0, time.Second, time.Second, time.Second}},
		{"jitter up", 60, 1, []time.Duration{0, 1250 * time.Millisecond, 1250 * time.Millisecond, 1250 * time.Millisecond}},
		{"jitter down", 60, -1, []time.Duration{0, 750 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond}},
		{"12 a minute", 12, 0.5, []time.Duration{0, 5625 * time.Millisecond, 5625 * time.Millisecond, 5625 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			c.jitter = tc.jitter
			l := c.limiter()
			var got []time.Duration
			for range tc.want {
				w, err := l.Wait(context.Background(), "example.com", tc.rate)
				require.NoError(t, err)
				got = append(got, w)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLimiterTimePassingAndDomains(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := c.limiter()
	ctx := context.Background()

	w, _ := l.Wait(ctx, "example.com", 30) // spacing 2s
	require.Zero(t, w)
	c.advance(1500 * time.Millisecond) // the action took 1.5s
	w, _ = l.Wait(ctx, "example.com", 30)
	require.Equal(t, 500*time.Millisecond, w, "only the rest of the spacing")
	c.advance(5 * time.Second)
	w, _ = l.Wait(ctx, "example.com", 30)
	require.Zero(t, w, "an idle domain is not waited for")

	// Another domain has its own schedule; a shared one is shared by every
	// caller (the runs of a worker).
	w, _ = l.Wait(ctx, "other.example", 30)
	require.Zero(t, w)
	w, _ = l.Wait(ctx, "example.com", 30)
	require.Equal(t, 2*time.Second, w)
}

func TestLimiterPoliteDelay(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := c.limiter()
	ctx := context.Background()

	// A polite delay alone: the next action waits for it after the last one
	// ended.
	w, _ := l.Wait(ctx, "example.com", 0)
	require.Zero(t, w)
	c.advance(300 * time.Millisecond)
	l.Done("example.com", 2*time.Second)
	w, _ = l.Wait(ctx, "example.com", 0)
	require.Equal(t, 2*time.Second, w)

	// With a rate: whichever is later.
	c.advance(100 * time.Millisecond)
	l.Done("example.com", 500*time.Millisecond)
	w, _ = l.Wait(ctx, "example.com", 6) // spacing 10s from the previous start
	require.Equal(t, 500*time.Millisecond, w, "the previous wait had no rate")
	c.advance(time.Second)
	l.Done("example.com", 500*time.Millisecond)
	w, _ = l.Wait(ctx, "example.com", 6)
	require.Equal(t, 9*time.Second, w, "10s after the previous start, 1s of which passed")
}

func TestLimiterCancelledWaitGivesTheSlotBack(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := c.limiter()
	_, err := l.Wait(context.Background(), "example.com", 60)
	require.NoError(t, err)

	c.block = true
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("run cancelled")
	cancel(stop)
	_, err = l.Wait(ctx, "example.com", 60)
	require.ErrorIs(t, err, stop)

	c.block = false
	w, err := l.Wait(context.Background(), "example.com", 60)
	require.NoError(t, err)
	require.Equal(t, time.Second, w, "the abandoned slot was given back")
}

func TestLimiterForgetsIdleDomains(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := c.limiter()
	for i := range maxIdleDomains + 10 {
		_, _ = l.Wait(context.Background(), string(rune('a'+i%26))+time.Duration(i).String(), 60)
	}
	c.advance(time.Hour)
	_, _ = l.Wait(context.Background(), "fresh.example", 60)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Less(t, len(l.domains), 20)
}

func TestDomain(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"www.example.com":       "example.com",
		"a.b.example.co.uk":     "example.co.uk",
		"Example.COM.":          "example.com",
		"example.com:8443":      "example.com",
		"127.0.0.1":             "127.0.0.1",
		"127.0.0.1:9000":        "127.0.0.1",
		"[::1]:80":              "::1",
		"::1":                   "::1",
		"localhost":             "localhost",
		"intranet":              "intranet",
		"user.github.io":        "user.github.io",
		"foo.user.github.io":    "user.github.io",
		"":                      "",
		"xn--bcher-kva.de":      "xn--bcher-kva.de",
		"shop.xn--bcher-kva.de": "xn--bcher-kva.de",
	} {
		require.Equal(t, want, Domain(in), in)
	}
}

func TestSpacing(t *testing.T) {
	t.Parallel()
	require.Zero(t, spacing(0))
	require.Zero(t, spacing(-3))
	require.Equal(t, time.Second, spacing(60))
	require.Equal(t, 100*time.Millisecond, spacing(600))
}
