// Package objstore keeps blobs (screenshots) in an object store: a small
// Store interface and an S3-compatible implementation (AWS S3, MinIO,
// Ceph, R2, ...) built on minio-go.
//
// Errors are classified with internal/fault: a missing object wraps
// fault.ErrNotFound, a store that cannot be reached or answers 5xx wraps
// fault.ErrUnavailable, and a refused request (bad credentials, no such
// bucket) wraps fault.ErrFailedPrecondition. Credentials never appear in an
// error or a log.
package objstore

import (
	"context"
)

// Store holds blobs by key. Put of an existing key replaces it, so a
// content-addressed key may be put again safely.
type Store interface {
	// Put stores data under key.
	Put(ctx context.Context, key, contentType string, data []byte) error
	// Get returns the bytes stored under key, or an error wrapping
	// fault.ErrNotFound when there are none.
	Get(ctx context.Context, key string) ([]byte, error)
}
