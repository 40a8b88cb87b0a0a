package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
)

// retryDelays are the waits after each failed attempt: 8 attempts over
// about 63 minutes.
var retryDelays = [...]time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
}

// RetryDelay is the wait after failed attempt number attempt (1-based)
// before the next: 5s, 30s, 2m, 5m, 10m, 15m, then 30m.
func RetryDelay(attempt int) time.Duration {
	return retryDelays[min(max(attempt, 1), len(retryDelays))-1]
}

// WorkerConfig configures NewWorker.
type WorkerConfig struct {
	Store *store.Store
	// Keyring opens the runs' sealed params, where the webhook secret is.
	Keyring *secrets.Keyring
	// Client makes the POSTs: the server's egress client
	// (worker.Egress), which refuses private addresses unless they are
	// allowed. Redirects are never followed. Required.
	Client *http.Client
	Logger *slog.Logger
	// Timeout bounds one attempt. Default 15s.
	Timeout time.Duration
	// RetryDelay is the wait after a failed attempt. Default RetryDelay
	// with ±10% jitter.
	RetryDelay func(attempt int) time.Duration
}

// Worker is the River worker of queue.WebhookArgs jobs.
type Worker struct {
	river.WorkerDefaults[queue.WebhookArgs]
	cfg    WorkerConfig
	client *http.Client
	// retryAfter holds, by job ID, the wait a receiver asked for with
	// Retry-After on the attempt that just failed; NextRetry takes it.
	retryAfter sync.Map
}

// MaxRetryAfter bounds the wait a receiver's Retry-After can ask for.
const MaxRetryAfter = time.Hour

// NewWorker returns a Worker.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = func(attempt int) time.Duration {
			d := RetryDelay(attempt)
			return d + time.Duration((rand.Float64()-0.5)*0.2*float64(d))
		}
	}
	client := *cfg.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Worker{cfg: cfg, client: &client}
}

// Timeout implements river.Worker: one attempt and its bookkeeping.
func (w *Worker) Timeout(*river.Job[queue.WebhookArgs]) time.Duration {
	return w.cfg.Timeout + 10*time.Second
}

// NextRetry implements river.Worker: the retry schedule, or later when the
// receiver answered 429 or 503 with a Retry-After (at most MaxRetryAfter).
func (w *Worker) NextRetry(job *river.Job[queue.WebhookArgs]) time.Time {
	d := w.cfg.RetryDelay(job.Attempt)
	if v, ok := w.retryAfter.LoadAndDelete(job.ID); ok {
		d = max(d, v.(time.Duration))
	}
	return time.Now().Add(d)
}

// retryAfter reads a 429 or 503 answer's Retry-After (seconds or an HTTP
// date) as a wait, at most MaxRetryAfter; 0 when there is none.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// Work makes one attempt at a delivery and records it. It returns an error
// (River retries) while attempts remain; a delivery that can never succeed
// (its secret cannot be opened) is failed at once.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.WebhookArgs]) error {
	d, err := w.cfg.Store.GetWebhookDelivery(ctx, job.Args.DeliveryID)
	if errors.Is(err, fault.ErrNotFound) {
		return nil // deleted with its run
	}
	if err != nil {
		return err
	}
	if d.State != store.WebhookPending {
		return nil
	}
	log := w.cfg.Logger.With("delivery_id", d.Id, "run_id", d.RunId, "event", d.Event, "attempt", job.Attempt)
	secret, err := w.secret(ctx, d.RunId)
	if err != nil {
		log.ErrorContext(ctx, "webhook delivery cannot be signed; failed", "error", err)
		if rerr := w.record(ctx, d.Id, store.WebhookAttempt{Attempt: job.Attempt, Err: err.Error(), State: store.WebhookFailed}); rerr != nil {
			return rerr
		}
		return river.JobCancel(err)
	}
	status, wait, err := w.post(ctx, d, secret)
	if err != nil && wait > 0 && job.Attempt < job.MaxAttempts {
		w.retryAfter.Store(job.ID, wait) // NextRetry takes it
	}
	a := store.WebhookAttempt{Attempt: job.Attempt, Status: status, State: store.WebhookDelivered}
	if err != nil {
		a.Err, a.State = err.Error(), store.WebhookPending
		if job.Attempt >= job.MaxAttempts {
			a.State = store.WebhookFailed
		}
	}
	if rerr := w.record(ctx, d.Id, a); rerr != nil {
		return rerr
	}
	host := ""
	if u, perr := url.Parse(d.Url); perr == nil {
		host = u.Host
	}
	if err != nil {
		log.WarnContext(ctx, "webhook attempt failed", "host", host, "status", status, "error", err, "state", a.State)
		return err
	}
	log.InfoContext(ctx, "webhook delivered", "host", host, "status", status)
	return nil
}

func (w *Worker) record(ctx context.Context, id string, a store.WebhookAttempt) error {
	err := w.cfg.Store.RecordWebhookAttempt(context.WithoutCancel(ctx), id, a)
	if errors.Is(err, store.ErrWebhookDone) {
		return nil
	}
	return err
}

// secret opens the run's webhook secret from its sealed params.
func (w *Worker) secret(ctx context.Context, runID string) (string, error) {
	sealed, err := w.cfg.Store.SealedParams(ctx, runID)
	if err != nil {
		return "", err
	}
	if sealed == nil {
		return "", errors.New("the run's webhook secret is not stored")
	}
	if w.cfg.Keyring == nil {
		return "", errors.New("the server has no encryption key to open the run's webhook secret")
	}
	raw, err := w.cfg.Keyring.Open(sealed, secrets.RunParamsAAD(runID))
	if err != nil {
		return "", fmt.Errorf("the run's webhook secret cannot be opened: %w", err)
	}
	params := &wfv1.RunParams{}
	if err := protojson.Unmarshal(raw, params); err != nil {
		return "", errors.New("the run's sealed params cannot be decoded")
	}
	if params.GetWebhook().GetSecret() == "" {
		return "", errors.New("the run's webhook has no secret")
	}
	return params.GetWebhook().GetSecret(), nil
}

// post sends the delivery once and returns the answer's status (0 when
// there was none), the wait the receiver asked for before a retry, and why
// the attempt failed.
func (w *Worker) post(ctx context.Context, d *store.WebhookDelivery, secret string) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Url, bytes.NewReader(d.Body))
	if err != nil {
		return 0, 0, errors.New("the webhook URL is not valid")
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Wayfinder-Webhook/1")
	req.Header.Set(HeaderID, d.Id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, d.Body))
	resp, err := w.client.Do(req)
	if err != nil {
		// The URL is the delivery's own (and may carry a token): the
		// error says what happened without repeating it.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("no answer within %s", w.cfg.Timeout)
		}
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, retryAfter(resp, time.Now()), fmt.Errorf("HTTP %s", resp.Status)
	}
	return resp.StatusCode, 0, nil
}
