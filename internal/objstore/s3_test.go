package objstore_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/objstore"
	"github.com/wayfinder/wayfinder/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

func newS3(t *testing.T, cfg objstore.S3Config) *objstore.S3 {
	t.Helper()
	cfg.Transport = &http.Transport{}
	t.Cleanup(cfg.Transport.(*http.Transport).CloseIdleConnections)
	s, err := objstore.NewS3(cfg)
	require.NoError(t, err)
	return s
}

func TestS3PutGet(t *testing.T) {
	t.Parallel()
	srv := objstoretest.NewServer(t, "shots")
	s := newS3(t, srv.Config())
	ctx := t.Context()

	require.NoError(t, s.Check(ctx))
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	require.NoError(t, s.Put(ctx, "wf/runs/r1/abc.png", "image/png", png))
	got, err := s.Get(ctx, "wf/runs/r1/abc.png")
	require.NoError(t, err)
	require.Equal(t, png, got)
	data, ct, ok := srv.Object(t, "wf/runs/r1/abc.png")
	require.True(t, ok)
	require.Equal(t, png, data)
	require.Equal(t, "image/png", ct)

	// Putting the same key again is harmless and keeps one object.
	require.NoError(t, s.Put(ctx, "wf/runs/r1/abc.png", "image/png", png))
	require.Equal(t, []string{"wf/runs/r1/abc.png"}, srv.Keys(t))

	_, err = s.Get(ctx, "wf/runs/r1/missing.png")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// TestS3Failures: only failures that may pass are retried, a bounded number
// of times; every error has a fault kind and never the secret key.
func TestS3Failures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		fail      func(*objstoretest.Server)
		op        string
		wantKind  error
		wantTries int64 // 0: don't check
	}{
		{"put passes after two 500s", func(s *objstoretest.Server) { s.FailNext(2, http.StatusInternalServerError) }, "put", nil, 3},
		{"put gives up after three 503s", func(s *objstoretest.Server) { s.FailAll(http.StatusServiceUnavailable) }, "put", fault.ErrUnavailable, 3},
		{"get gives up after three 500s", func(s *objstoretest.Server) { s.FailAll(http.StatusInternalServerError) }, "get", fault.ErrUnavailable, 3},
		{"403 is not retried", func(s *objstoretest.Server) { s.FailAll(http.StatusForbidden) }, "put", fault.ErrFailedPrecondition, 1},
		{"429 is retried", func(s *objstoretest.Server) { s.FailNext(1, http.StatusTooManyRequests) }, "put", nil, 2},
		{"check on a failing store", func(s *objstoretest.Server) { s.FailAll(http.StatusBadGateway) }, "check", fault.ErrUnavailable, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := objstoretest.NewServer(t, "shots")
			s := newS3(t, srv.Config())
			ctx := t.Context()
			require.NoError(t, s.Put(ctx, "k", "image/png", []byte("x")))
			before := srv.Requests()
			tc.fail(srv)
			var err error
			switch tc.op {
			case "put":
				err = s.Put(ctx, "k", "image/png", []byte("y"))
			case "get":
				_, err = s.Get(ctx, "k")
			case "check":
				err = s.Check(ctx)
			}
			if tc.wantKind == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantKind)
				require.NotContains(t, err.Error(), objstoretest.SecretAccessKey)
			}
			if tc.wantTries > 0 {
				require.Equal(t, tc.wantTries, srv.Requests()-before)
			}
		})
	}
}

func TestS3MissingBucket(t *testing.T) {
	t.Parallel()
	srv := objstoretest.NewServer(t, "shots")
	cfg := srv.Config()
	cfg.Bucket = "other"
	err := newS3(t, cfg).Check(t.Context())
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	require.ErrorContains(t, err, `"other" does not exist`)
}

func TestS3Unreachable(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now
	s := newS3(t, objstore.S3Config{Endpoint: addr, Bucket: "shots", Region: "us-east-1", PathStyle: true,
		AccessKeyID: objstoretest.AccessKeyID, SecretAccessKey: objstoretest.SecretAccessKey, AttemptTimeout: 5 * time.Second})
	err = s.Put(t.Context(), "k", "image/png", []byte("x"))
	require.ErrorIs(t, err, fault.ErrUnavailable)
	require.NotContains(t, err.Error(), objstoretest.SecretAccessKey)
}

func TestNewS3Invalid(t *testing.T) {
	t.Parallel()
	_, err := objstore.NewS3(objstore.S3Config{Bucket: "b"})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	_, err = objstore.NewS3(objstore.S3Config{Endpoint: "bad host:x:y", Bucket: "b"})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
}

func TestS3ConfigHidesCredentials(t *testing.T) {
	t.Parallel()
	cfg := objstore.S3Config{Endpoint: "minio:9000", Bucket: "shots", AccessKeyID: "AKIAID", SecretAccessKey: "the-secret", SessionToken: "the-token"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("s3", "cfg", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), logged.String()} {
		require.Contains(t, out, "minio:9000")
		for _, secret := range []string{"AKIAID", "the-secret", "the-token"} {
			require.NotContains(t, out, secret)
		}
	}
}
