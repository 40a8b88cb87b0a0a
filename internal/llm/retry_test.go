package llm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// flaky answers each call with the next of its outcomes; an outcome of
// errBlock waits for the call's context to end and returns its error.
type flaky struct {
	mu       sync.Mutex
	outcomes []error
	calls    int
}

var errBlock = errors.New("block until the context ends")

func (f *flaky) Provider() string { return "fake" }
func (f *flaky) Name() string     { return "flaky-1" }

func (f *flaky) Complete(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	i := f.calls
	f.calls++
	f.mu.Unlock()
	if i >= len(f.outcomes) {
		return nil, fmt.Errorf("unexpected call %d", i+1)
	}
	switch err := f.outcomes[i]; {
	case errors.Is(err, errBlock):
		<-ctx.Done()
		return nil, fmt.Errorf("fake: %w", ctx.Err())
	case err != nil:
		return nil, err
	}
	return &llm.Response{Text: fmt.Sprintf("answer %d", i+1)}, nil
}

func (f *flaky) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func transient(msg string) error {
	return &llm.Error{Class: llm.ErrTransient, Provider: "fake", Status: 503, Message: msg}
}

func rateLimited(after time.Duration) error {
	return &llm.Error{Class: llm.ErrRateLimited, Provider: "fake", Status: 429, Message: "slow down", RetryAfter: after}
}

type retryCall struct {
	attempt int
	err     error
	wait    time.Duration
}

func TestWithRetry(t *testing.T) {
	t.Parallel()

	fast := llm.RetryPolicy{Initial: time.Millisecond, Multiplier: 2, Max: 20 * time.Millisecond, Attempts: 3, AttemptTimeout: time.Minute}

	tests := []struct {
		name     string
		policy   llm.RetryPolicy
		outcomes []error
		wantText string
		wantErr  error // errors.Is target
		wantNot  error // errors.Is must not match
		wantMsg  string
		calls    int
		check    func(t *testing.T, retries []retryCall)
	}{
		{
			name:     "success at once",
			policy:   fast,
			outcomes: []error{nil},
			wantText: "answer 1",
			calls:    1,
		},
		{
			name:     "success after transient failures",
			policy:   fast,
			outcomes: []error{transient("one"), fmt.Errorf("wrapped: %w", llm.ErrTransient), nil},
			wantText: "answer 3",
			calls:    3,
			check: func(t *testing.T, retries []retryCall) {
				require.Len(t, retries, 2)
				require.Equal(t, 1, retries[0].attempt)
				require.Equal(t, 2, retries[1].attempt)
				require.ErrorContains(t, retries[0].err, "one")
				for _, r := range retries {
					require.Positive(t, r.wait)
					require.LessOrEqual(t, r.wait, fast.Max)
				}
			},
		},
		{
			name:     "gives up after Attempts with the last error",
			policy:   fast,
			outcomes: []error{transient("first"), rateLimited(0), transient("last")},
			wantErr:  llm.ErrTransient,
			wantMsg:  "last",
			calls:    3,
			check: func(t *testing.T, retries []retryCall) {
				require.Len(t, retries, 2)
			},
		},
		{
			name:     "non-retryable returned at once",
			policy:   fast,
			outcomes: []error{&llm.Error{Class: llm.ErrInvalidRequest, Provider: "fake", Status: 400, Message: "bad tool schema"}},
			wantErr:  llm.ErrInvalidRequest,
			wantMsg:  "bad tool schema",
			calls:    1,
		},
		{
			name:     "auth not retried",
			policy:   fast,
			outcomes: []error{fmt.Errorf("key: %w", llm.ErrAuth)},
			wantErr:  llm.ErrAuth,
			calls:    1,
		},
		{
			name:     "unclassified error not retried",
			policy:   fast,
			outcomes: []error{errors.New("boom")},
			wantMsg:  "boom",
			calls:    1,
		},
		{
			name:     "RetryAfter honoured when longer than the backoff",
			policy:   fast,
			outcomes: []error{rateLimited(15 * time.Millisecond), nil},
			wantText: "answer 2",
			calls:    2,
			check: func(t *testing.T, retries []retryCall) {
				require.Len(t, retries, 1)
				require.Equal(t, 15*time.Millisecond, retries[0].wait)
				require.ErrorIs(t, retries[0].err, llm.ErrRateLimited)
			},
		},
		{
			name:     "RetryAfter capped at Max",
			policy:   fast,
			outcomes: []error{rateLimited(time.Hour), nil},
			wantText: "answer 2",
			calls:    2,
			check: func(t *testing.T, retries []retryCall) {
				require.Len(t, retries, 1)
				require.Equal(t, fast.Max, retries[0].wait)
			},
		},
		{
			name:     "attempt timeout is transient and retried",
			policy:   llm.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 2, AttemptTimeout: 5 * time.Millisecond},
			outcomes: []error{errBlock, nil},
			wantText: "answer 2",
			calls:    2,
			check: func(t *testing.T, retries []retryCall) {
				require.Len(t, retries, 1)
				require.ErrorIs(t, retries[0].err, llm.ErrTransient)
				require.NotErrorIs(t, retries[0].err, context.DeadlineExceeded)
			},
		},
		{
			name:     "every attempt times out",
			policy:   llm.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 2, AttemptTimeout: 5 * time.Millisecond},
			outcomes: []error{errBlock, errBlock},
			wantErr:  llm.ErrTransient,
			wantNot:  context.DeadlineExceeded,
			wantMsg:  "no answer within 5ms",
			calls:    2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &flaky{outcomes: tt.outcomes}
			var retries []retryCall
			m := llm.WithRetry(fake, tt.policy, func(attempt int, err error, wait time.Duration) {
				retries = append(retries, retryCall{attempt, err, wait})
			})

			resp, err := m.Complete(context.Background(), &llm.Request{})

			require.Equal(t, tt.calls, fake.count())
			if tt.wantText != "" {
				require.NoError(t, err)
				require.Equal(t, tt.wantText, resp.Text)
			} else {
				require.Error(t, err)
				require.Nil(t, resp)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				}
				if tt.wantNot != nil {
					require.NotErrorIs(t, err, tt.wantNot)
				}
				require.ErrorContains(t, err, tt.wantMsg)
			}
			if tt.check != nil {
				tt.check(t, retries)
			} else if tt.wantText == "" {
				require.Len(t, retries, tt.calls-1)
			}
		})
	}
}

func TestWithRetryContext(t *testing.T) {
	t.Parallel()

	t.Run("cancelled during the backoff wait", func(t *testing.T) {
		t.Parallel()
		// The wait is an hour: only the cancellation can end it.
		policy := llm.RetryPolicy{Initial: time.Hour, Max: time.Hour, Attempts: 3, AttemptTimeout: time.Minute}
		fake := &flaky{outcomes: []error{transient("down"), nil}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := llm.WithRetry(fake, policy, func(int, error, time.Duration) { cancel() })

		_, err := m.Complete(ctx, &llm.Request{})

		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, context.Canceled, err, "ctx's error as is")
		require.Equal(t, 1, fake.count())
	})

	t.Run("cancelled during an attempt", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		fake := &flaky{outcomes: []error{errBlock}}
		m := llm.WithRetry(fake, llm.RetryPolicy{Initial: time.Millisecond, AttemptTimeout: time.Hour}, nil)
		done := make(chan error, 1)
		go func() {
			_, err := m.Complete(ctx, &llm.Request{})
			done <- err
		}()
		require.Eventually(t, func() bool { return fake.count() == 1 }, 10*time.Second, time.Millisecond)
		cancel()

		err := <-done
		require.Equal(t, context.Canceled, err)
		require.Equal(t, 1, fake.count())
	})

	t.Run("caller's deadline is not an attempt timeout", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		fake := &flaky{outcomes: []error{errBlock, nil}}
		m := llm.WithRetry(fake, llm.RetryPolicy{Initial: time.Millisecond, AttemptTimeout: time.Hour}, nil)

		_, err := m.Complete(ctx, &llm.Request{})

		require.Equal(t, context.DeadlineExceeded, err)
		require.NotErrorIs(t, err, llm.ErrTransient)
		require.Equal(t, 1, fake.count())
	})

	t.Run("already done", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fake := &flaky{outcomes: []error{nil}}

		_, err := llm.WithRetry(fake, llm.DefaultRetryPolicy(), nil).Complete(ctx, &llm.Request{})

		require.Equal(t, context.Canceled, err)
		require.Zero(t, fake.count())
	})
}

func TestWithRetryPassesThrough(t *testing.T) {
	t.Parallel()
	m := llm.WithRetry(&flaky{}, llm.RetryPolicy{}, nil)
	require.Equal(t, "fake", m.Provider())
	require.Equal(t, "flaky-1", m.Name())
}

func TestDefaultRetryPolicy(t *testing.T) {
	t.Parallel()
	require.Equal(t, llm.RetryPolicy{
		Initial: time.Second, Multiplier: 2, Max: 10 * time.Second, Attempts: 3, AttemptTimeout: 30 * time.Second,
	}, llm.DefaultRetryPolicy())
}
