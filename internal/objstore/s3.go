package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wayfinder/wayfinder/internal/fault"
)

// S3Config configures an S3-compatible store.
type S3Config struct {
	// Endpoint is the server's host[:port], without a scheme.
	Endpoint string
	// Secure selects HTTPS (TLS, verified against the system's roots).
	Secure bool
	// Bucket holds the objects; it must exist.
	Bucket string
	// Region is the bucket's region (the signature needs it).
	Region string
	// PathStyle addresses the bucket as a path (endpoint/bucket/key), as
	// MinIO and most self-hosted stores need; otherwise the client picks
	// (virtual-hosted bucket.endpoint for AWS).
	PathStyle bool
	// AccessKeyID, SecretAccessKey and SessionToken ("" when not
	// temporary) sign the requests. They are never logged.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// Transport carries the requests; nil: a transport with connect and
	// response-header timeouts.
	Transport http.RoundTripper
	// MaxAttempts bounds the tries of one operation (0: 3). Only an
	// unreachable store, 5xx, 408 and 429 are retried.
	MaxAttempts int
	// AttemptTimeout bounds one try (0: 20s).
	AttemptTimeout time.Duration
	// MaxObjectBytes is the largest object Get reads (0: 64 MiB).
	MaxObjectBytes int64
}

// String describes c without its credentials, so a %v or a log line cannot
// leak them.
func (c S3Config) String() string {
	return fmt.Sprintf("{endpoint:%s secure:%t bucket:%s region:%s path_style:%t}", c.Endpoint, c.Secure, c.Bucket, c.Region, c.PathStyle)
}

// LogValue is c for log/slog, without its credentials.
func (c S3Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// S3 is a Store in an S3-compatible bucket.
type S3 struct {
	client *minio.Client
	cfg    S3Config
}

var _ Store = (*S3)(nil)

// NewS3 returns a store for cfg. It does not contact the server; Check
// does.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: endpoint and bucket are required: %w", fault.ErrInvalidArgument)
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 20 * time.Second
	}
	if cfg.MaxObjectBytes <= 0 {
		cfg.MaxObjectBytes = 64 << 20
	}
	if cfg.Transport == nil {
		cfg.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 15 * time.Second,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure:       cfg.Secure,
		Transport:    cfg.Transport,
		Region:       cfg.Region,
		BucketLookup: lookup,
		// Retries are ours (bounded, classified): one try per call here.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %q: %w", cfg.Endpoint, fault.ErrInvalidArgument)
	}
	return &S3{client: client, cfg: cfg}, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key, contentType string, data []byte) error {
	_, err := retry(ctx, s, "put", key, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{ContentType: contentType, DisableMultipart: true})
		return struct{}{}, err
	})
	return err
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	return retry(ctx, s, "get", key, func(ctx context.Context) ([]byte, error) {
		obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return nil, err
		}
		defer func() { _ = obj.Close() }()
		data, err := io.ReadAll(io.LimitReader(obj, s.cfg.MaxObjectBytes+1))
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > s.cfg.MaxObjectBytes {
			return nil, backoff.Permanent(fmt.Errorf("larger than %d bytes: %w", s.cfg.MaxObjectBytes, fault.ErrFailedPrecondition))
		}
		return data, nil
	})
}

// Check makes sure the bucket exists and the credentials may use it. An
// error wraps fault.ErrFailedPrecondition when the store answered no (no
// such bucket, refused credentials) and fault.ErrUnavailable when it could
// not be asked.
func (s *S3) Check(ctx context.Context) error {
	ok, err := retry(ctx, s, "check bucket", "", func(ctx context.Context) (bool, error) {
		return s.client.BucketExists(ctx, s.cfg.Bucket)
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("s3 bucket %q does not exist: %w", s.cfg.Bucket, fault.ErrFailedPrecondition)
	}
	return nil
}

// retry runs op with bounded, jittered exponential backoff, each try under
// its own timeout, and classifies the final error.
func retry[T any](ctx context.Context, s *S3, what, key string, op func(context.Context) (T, error)) (T, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 2*time.Second
	v, err := backoff.Retry(ctx, func() (T, error) {
		actx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		defer cancel()
		v, err := op(actx)
		if err != nil && (ctx.Err() != nil || !retryable(err)) {
			return v, backoff.Permanent(err)
		}
		return v, err
	}, backoff.WithBackOff(b), backoff.WithMaxTries(uint(s.cfg.MaxAttempts)))
	if err != nil {
		var zero T
		return zero, classify(ctx, what, s.cfg.Bucket, key, err)
	}
	return v, nil
}

// retryable reports whether a failed try may succeed when repeated.
func retryable(err error) bool {
	if errors.Is(err, fault.ErrFailedPrecondition) {
		return false
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode == 0:
		return true // no answer: network, timeout
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		return true
	}
	return false
}

// classify wraps err in the fault kind that describes it. The text names
// the operation, bucket and key and the store's error code; never the
// credentials (minio-go sends them in headers only).
func classify(ctx context.Context, what, bucket, key string, err error) error {
	where := fmt.Sprintf("s3 %s %s/%s", what, bucket, key)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", where, ctx.Err())
	}
	if errors.Is(err, fault.ErrFailedPrecondition) {
		return fmt.Errorf("%s: %w", where, err)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey || (resp.StatusCode == http.StatusNotFound && key != "" && resp.Code != minio.NoSuchBucket):
		return fmt.Errorf("%s: no such object: %w", where, fault.ErrNotFound)
	case resp.StatusCode == 0:
		return fmt.Errorf("%s: store unreachable: %w: %w", where, fault.ErrUnavailable, err)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%s: %s (HTTP %d): %w", where, resp.Code, resp.StatusCode, fault.ErrUnavailable)
	default:
		return fmt.Errorf("%s: %s (HTTP %d): %w", where, resp.Code, resp.StatusCode, fault.ErrFailedPrecondition)
	}
}
