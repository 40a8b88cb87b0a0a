package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/objstore"
)

// SaveMedia stores m for step step of run runID (0: no step) and returns
// its ID. The run's media are stored once per content: saving the same
// bytes again returns the existing ID.
func (s *Store) SaveMedia(ctx context.Context, runID string, step int32, m *Media) (string, error) {
	m = s.stageMedia(ctx, runID, m)
	var id string
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		id, err = saveMedia(ctx, tx, runID, step, m)
		return err
	})
	return id, err
}

// MediaObjects puts media bytes (screenshots) in an object store: the
// media row keeps the object's key and no bytes.
type MediaObjects struct {
	// Objects holds the bytes.
	Objects objstore.Store
	// Prefix starts every key ("" for none): a medium is the object
	// <prefix>/runs/<run id>/<sha256>.<ext>.
	Prefix string
	// Fallbacks counts media kept in Postgres because their upload
	// failed; nil: not counted.
	Fallbacks prometheus.Counter
	// Cooldown is how long uploads are skipped (media go to Postgres at
	// once) after one failed, so an outage costs one timeout per cooldown
	// rather than one per screenshot. 0: 30s; negative: never skipped.
	Cooldown time.Duration
	// Logger receives upload and read failures; nil: slog.Default().
	Logger *slog.Logger
}

// mediaObjects is the configured object store with its state.
type mediaObjects struct {
	MediaObjects
	// skipUntil is the Unix nanosecond time uploads resume after a
	// failure.
	skipUntil atomic.Int64
}

// UseMediaObjects makes s keep the bytes of media it saves from now on in
// o.Objects; media already stored in Postgres stay there. Call it before s
// is used.
func (s *Store) UseMediaObjects(o MediaObjects) {
	if o.Cooldown == 0 {
		o.Cooldown = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s.media = &mediaObjects{MediaObjects: o}
}

// MediaFallbackMetric is the counter of media kept in Postgres because their
// upload to the object store failed.
const MediaFallbackMetric = "wayfinder_media_fallback_total"

// UseMediaStore configures where s keeps media bytes from cfg and registers
// the fallback counter with reg. With config.MediaS3 it checks the bucket
// first: a bucket that does not exist or refuses the credentials is an
// error (the server should not start), one that cannot be reached now is
// logged and used (uploads fall back to Postgres until it answers). Call it
// before s is used.
func (s *Store) UseMediaStore(ctx context.Context, cfg config.Config, reg prometheus.Registerer, logger *slog.Logger) error {
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{
		Name: MediaFallbackMetric,
		Help: "Media (screenshots) kept in Postgres because their upload to the object store failed.",
	})
	if err := reg.Register(fallbacks); err != nil {
		return fmt.Errorf("register media metrics: %w", err)
	}
	if cfg.MediaStore != config.MediaS3 {
		return nil
	}
	c := cfg.S3
	s3, err := objstore.NewS3(objstore.S3Config{
		Endpoint: c.Endpoint, Secure: c.Secure, Bucket: c.Bucket, Region: c.Region, PathStyle: c.PathStyle,
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
		AttemptTimeout: 10 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("media store: %w", err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch err := s3.Check(checkCtx); {
	case errors.Is(err, fault.ErrFailedPrecondition):
		return fmt.Errorf("media store: %w", err)
	case err != nil:
		logger.WarnContext(ctx, "media store unreachable at start; screenshots go to Postgres until it answers",
			"endpoint", c.Endpoint, "bucket", c.Bucket, "error", err)
	default:
		logger.InfoContext(ctx, "media store", "store", "s3", "endpoint", c.Endpoint, "bucket", c.Bucket, "prefix", c.Prefix)
	}
	s.UseMediaObjects(MediaObjects{Objects: s3, Prefix: c.Prefix, Fallbacks: fallbacks, Logger: logger})
	return nil
}

// mediaExt is the key's extension per content type.
var mediaExt = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif",
}

// MediaKey returns the object key of media with content data and type
// contentType of run runID under prefix: <prefix>/runs/<run id>/<sha256>.<ext>.
// The key depends on the content only, so a retried save puts the same
// object again.
func MediaKey(prefix, runID string, data []byte, contentType string) string {
	sum := sha256.Sum256(data)
	ext, ok := mediaExt[contentType]
	if !ok {
		ext = ".bin"
	}
	return path.Join(prefix, "runs", runID, hex.EncodeToString(sum[:])+ext)
}

// stageMedia uploads m's bytes to the object store, when one is
// configured, before the transaction that records m: no transaction is held
// open across network I/O. It returns m marked with its object key, or m
// itself (its bytes go to Postgres) when there is no object store or the
// upload failed, which is counted and logged but never an error: an
// object store outage does not fail a run.
func (s *Store) stageMedia(ctx context.Context, runID string, m *Media) *Media {
	o := s.media
	if o == nil || m == nil {
		return m
	}
	id, err := uuid.Parse(runID)
	if err != nil {
		return m // not a run: recording it fails in the transaction
	}
	if time.Now().UnixNano() < o.skipUntil.Load() {
		o.fallback()
		return m
	}
	key := MediaKey(o.Prefix, id.String(), m.Data, m.ContentType)
	if err := o.Objects.Put(ctx, key, m.ContentType, m.Data); err != nil {
		if ctx.Err() != nil {
			return m // the caller is giving up; no outage to report
		}
		if o.Cooldown > 0 {
			o.skipUntil.Store(time.Now().Add(o.Cooldown).UnixNano())
		}
		o.fallback()
		o.Logger.WarnContext(ctx, "media upload failed; kept in Postgres", "run_id", runID, "key", key,
			"skip_uploads_for", o.Cooldown.String(), "error", err)
		return m
	}
	staged := *m
	staged.objectKey = key
	return &staged
}

func (o *mediaObjects) fallback() {
	if o.Fallbacks != nil {
		o.Fallbacks.Inc()
	}
}

// readObject returns the bytes of media id from the object store. Its
// errors are fit for a client: the details are logged.
func (s *Store) readObject(ctx context.Context, id, key string) ([]byte, error) {
	o := s.media
	if o == nil {
		return nil, fmt.Errorf("media %q is in an object store, and this server has none configured (-media-store): %w",
			id, fault.ErrUnavailable)
	}
	data, err := o.Objects.Get(ctx, key)
	switch {
	case err == nil:
		return data, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("media %q: %w", id, ctx.Err())
	case errors.Is(err, fault.ErrNotFound):
		o.Logger.WarnContext(ctx, "media object missing", "media_id", id, "key", key)
		return nil, fmt.Errorf("media %q: its object is missing from the object store: %w", id, fault.ErrNotFound)
	default:
		o.Logger.WarnContext(ctx, "media read failed", "media_id", id, "key", key, "error", err)
		return nil, fmt.Errorf("media %q: the object store is unavailable; retry later: %w", id, fault.ErrUnavailable)
	}
}
