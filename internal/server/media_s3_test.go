package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/objstore/objstoretest"
	"github.com/wayfinder/wayfinder/internal/server"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// startS3Server runs a server whose media store is the fake bucket srv,
// logging at debug level into logs as well as the test output.
func startS3Server(t *testing.T, dbURL string, srv *objstoretest.Server, logs io.Writer) *testServer {
	t.Helper()
	cfg := testConfig(t, dbURL, serverOpts{allowPrivate: true})
	cfg.MediaStore = config.MediaS3
	cfg.S3 = config.S3{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: "us-east-1", Prefix: "wf", PathStyle: true, Insecure: true,
		AccessKeyID: objstoretest.AccessKeyID, SecretAccessKey: objstoretest.SecretAccessKey}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{cancel: cancel, done: make(chan error, 1), dataDir: cfg.DataDir}
	ready := make(chan server.Addrs, 1)
	logger := slog.New(slog.NewMultiHandler(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}),
		slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	go func() {
		ts.done <- server.Run(ctx, cfg, server.Options{Logger: logger, ReapInterval: time.Second,
			Ready: func(a server.Addrs) { ready <- a }})
	}()
	select {
	case ts.addrs = <-ready:
	case err := <-ts.done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatal("server did not start in 2 minutes")
	}
	t.Cleanup(ts.stop)
	conn, err := grpc.NewClient(ts.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	ts.conn, ts.client = conn, wfv1.NewRunServiceClient(conn)
	return ts
}

type runMedia struct {
	id      string
	hasData bool
	key     *string
}

func mediaOf(t *testing.T, pool *pgxpool.Pool, runID string) []runMedia {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT id::text, data IS NOT NULL, object_key FROM media WHERE run_id = $1 ORDER BY created_at`, runID)
	require.NoError(t, err)
	defer rows.Close()
	var out []runMedia
	for rows.Next() {
		var m runMedia
		require.NoError(t, rows.Scan(&m.id, &m.hasData, &m.key))
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

// runToEnd creates a run on the test site and waits until it finished.
func runToEnd(t *testing.T, ts *testServer, s *site) *wfv1.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/")})
	require.NoError(t, err)
	waitForEvent(t, ts.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED)
	run, err = ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	return run
}

func getMediaREST(t *testing.T, ts *testServer, id string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + ts.addrs.HTTP + "/v1/media/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// TestMediaInS3: with -media-store=s3 a run's screenshots are objects in the
// bucket, its media rows hold their keys and no bytes, and GetMedia over
// REST returns the object's bytes. When the bucket then fails (500s), the
// next run still completes: its screenshots fall back to Postgres, counted
// by wayfinder_media_fallback_total, and are served from there. The secret
// key is never logged.
func TestMediaInS3(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	bucket := objstoretest.NewServer(t, "shots")
	logs := &syncBuffer{}
	ts := startS3Server(t, dbURL, bucket, logs)
	s := newSite(t)
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	run := runToEnd(t, ts, s)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, run.Status)
	require.NotEmpty(t, run.FinalScreenshotMediaId)
	media := mediaOf(t, pool, run.Id)
	require.NotEmpty(t, media)
	var keys []string
	for _, m := range media {
		require.False(t, m.hasData, "media %s kept its bytes in Postgres", m.id)
		require.NotNil(t, m.key)
		require.True(t, strings.HasPrefix(*m.key, "wf/runs/"+run.Id+"/"), "key %s", *m.key)
		keys = append(keys, *m.key)
	}
	require.Subset(t, bucket.Keys(t), keys)
	for _, m := range media {
		code, ct, body := getMediaREST(t, ts, m.id)
		require.Equal(t, http.StatusOK, code)
		object, objectType, ok := bucket.Object(t, *m.key)
		require.True(t, ok)
		require.Equal(t, object, body)
		require.Equal(t, objectType, ct)
	}
	_, _, final := getMediaREST(t, ts, run.FinalScreenshotMediaId)
	require.True(t, bytes.HasPrefix(final, pngMagic), "the final screenshot is a PNG")

	// The bucket fails: the run completes all the same, bytes in Postgres.
	bucket.FailAll(http.StatusInternalServerError)
	run2 := runToEnd(t, ts, s)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, run2.Status)
	media2 := mediaOf(t, pool, run2.Id)
	require.NotEmpty(t, media2)
	for _, m := range media2 {
		require.True(t, m.hasData, "media %s has no bytes", m.id)
		require.Nil(t, m.key)
	}
	code, ct, body := getMediaREST(t, ts, run2.FinalScreenshotMediaId)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "image/png", ct)
	require.True(t, bytes.HasPrefix(body, pngMagic))

	// Reading the first run's object while the bucket fails: 503, with no
	// internals in the answer.
	code, _, body = getMediaREST(t, ts, run.FinalScreenshotMediaId)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.NotContains(t, string(body), bucket.Endpoint)
	require.NotContains(t, string(body), "wf/runs")

	resp, err := http.Get("http://" + ts.addrs.HTTP + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Regexp(t, `(?m)^wayfinder_media_fallback_total [1-9]`, string(metrics))

	// A missing object is NOT_FOUND (404), not a 500.
	bucket.Heal()
	bucket.Delete(t, keys[0])
	code, _, body = getMediaREST(t, ts, media[0].id)
	require.Equal(t, http.StatusNotFound, code, "%s", body)

	require.Contains(t, logs.String(), "media upload failed")
	require.NotContains(t, logs.String(), objstoretest.SecretAccessKey)
}

// TestMediaStoreRefusesMissingBucket: a bucket that does not exist stops
// the server at start with a clear error.
func TestMediaStoreRefusesMissingBucket(t *testing.T) {
	t.Parallel()
	bucket := objstoretest.NewServer(t, "shots")
	cfg := testConfig(t, storetest.NewDB(t), serverOpts{})
	cfg.MediaStore = config.MediaS3
	cfg.S3 = config.S3{Endpoint: bucket.Endpoint, Bucket: "absent", Region: "us-east-1", Prefix: "wf", PathStyle: true,
		AccessKeyID: objstoretest.AccessKeyID, SecretAccessKey: objstoretest.SecretAccessKey}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := server.Run(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Ready: func(server.Addrs) { t.Error("the server started") }})
	require.ErrorContains(t, err, `s3 bucket "absent" does not exist`)
	require.NotContains(t, err.Error(), objstoretest.SecretAccessKey)
}
