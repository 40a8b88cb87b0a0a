package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// RetryPolicy says how WithRetry retries a model. A zero field takes the
// DefaultRetryPolicy value.
type RetryPolicy struct {
	// Initial is the first wait between attempts. Default 1s.
	Initial time.Duration
	// Multiplier grows the wait after each retry. Default 2.
	Multiplier float64
	// Max caps every wait, including one the provider asked for. Default 10s.
	Max time.Duration
	// Attempts is the number of attempts in all (1 means no retries).
	// Default 3.
	Attempts int
	// AttemptTimeout bounds one attempt. Default 30s.
	AttemptTimeout time.Duration
}

// DefaultRetryPolicy is 3 attempts, waits of 1s then 2s (with jitter,
// capped at 10s) and 30s per attempt.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Initial:        time.Second,
		Multiplier:     2,
		Max:            10 * time.Second,
		Attempts:       3,
		AttemptTimeout: 30 * time.Second,
	}
}

// withDefaults fills p's zero fields from DefaultRetryPolicy.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Initial <= 0 {
		p.Initial = d.Initial
	}
	if p.Multiplier < 1 {
		p.Multiplier = d.Multiplier
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	if p.Attempts <= 0 {
		p.Attempts = d.Attempts
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = d.AttemptTimeout
	}
	return p
}

// WithRetry returns a Model that retries m's Retryable errors (ErrTransient,
// ErrRateLimited) with exponential backoff and jitter. A wait the provider
// asked for (*Error.RetryAfter) is honoured when it is longer than the
// backoff; every wait is capped at p.Max. Each attempt is bounded by
// p.AttemptTimeout, and an attempt that runs out of it fails with
// ErrTransient (it is not the caller's deadline). Other error classes are
// returned at once; when ctx ends, ctx's error is returned at once, also
// during a wait. After p.Attempts attempts the last error is returned.
//
// onRetry, when non-nil, is called before each wait with the number of the
// attempt that failed (1 for the first), its error and the wait, so callers
// can log and count retries.
//
// Provider and Name are m's.
func WithRetry(m Model, p RetryPolicy, onRetry func(attempt int, err error, wait time.Duration)) Model {
	return &retrying{model: m, policy: p.withDefaults(), onRetry: onRetry}
}

type retrying struct {
	model   Model
	policy  RetryPolicy
	onRetry func(attempt int, err error, wait time.Duration)
}

func (r *retrying) Provider() string { return r.model.Provider() }
func (r *retrying) Name() string     { return r.model.Name() }

func (r *retrying) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wait := &waits{policy: r.policy}
	attempt := 0
	op := func() (*Response, error) {
		attempt++
		resp, err := r.attempt(ctx, req)
		switch {
		case err == nil:
			return resp, nil
		case ctx.Err() != nil:
			return nil, backoff.Permanent(ctx.Err())
		case !Retryable(err):
			return nil, backoff.Permanent(err)
		}
		wait.last = err
		return nil, err
	}
	var notify backoff.Notify
	if r.onRetry != nil {
		notify = func(err error, d time.Duration) { r.onRetry(attempt, err, d) }
	}
	resp, err := backoff.Retry(ctx, op,
		backoff.WithBackOff(wait),
		backoff.WithMaxTries(uint(r.policy.Attempts)),
		backoff.WithMaxElapsedTime(0), // Attempts and Max bound the time.
		backoff.WithNotify(notify),
	)
	if err != nil && ctx.Err() != nil {
		// The caller's context ended (during an attempt or a wait): its
		// error, as is, whatever the attempt made of it.
		return nil, ctx.Err()
	}
	return resp, err
}

// attempt makes one call bounded by the policy's AttemptTimeout.
func (r *retrying) attempt(ctx context.Context, req *Request) (*Response, error) {
	actx, cancel := context.WithTimeout(ctx, r.policy.AttemptTimeout)
	defer cancel()
	resp, err := r.model.Complete(actx, req)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return nil, &Error{
			Class:    ErrTransient,
			Provider: r.model.Provider(),
			Message:  fmt.Sprintf("no answer within %s", r.policy.AttemptTimeout),
		}
	}
	return resp, err
}

// waits is the backoff of one Complete call: exponential with jitter, at
// least the RetryAfter of the last error, at most Max.
type waits struct {
	policy RetryPolicy
	exp    *backoff.ExponentialBackOff
	last   error
}

func (w *waits) Reset() {
	w.exp = &backoff.ExponentialBackOff{
		InitialInterval:     w.policy.Initial,
		RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier:          w.policy.Multiplier,
		MaxInterval:         w.policy.Max,
	}
	w.exp.Reset()
}

func (w *waits) NextBackOff() time.Duration {
	d := w.exp.NextBackOff()
	var e *Error
	if errors.As(w.last, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return min(d, w.policy.Max)
}
