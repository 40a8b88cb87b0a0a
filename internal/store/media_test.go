package store_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/objstore"
	"github.com/wayfinder/wayfinder/internal/objstore/objstoretest"
	"github.com/wayfinder/wayfinder/internal/store"
)

// newObjectStore returns a store whose media go to a fake S3 bucket, with
// its fallback counter.
func newObjectStore(t *testing.T, cooldown time.Duration) (*store.Store, *pgxpool.Pool, *objstoretest.Server, prometheus.Counter) {
	t.Helper()
	s, pool := newStore(t)
	srv := objstoretest.NewServer(t, "shots")
	cfg := srv.Config()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg.Transport = tr
	s3, err := objstore.NewS3(cfg)
	require.NoError(t, err)
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_fallbacks"})
	s.UseMediaObjects(store.MediaObjects{Objects: s3, Prefix: "wf", Fallbacks: fallbacks, Cooldown: cooldown})
	return s, pool, srv, fallbacks
}

type mediaRow struct {
	hasData bool
	key     *string
}

func getMediaRow(t *testing.T, pool *pgxpool.Pool, id string) mediaRow {
	t.Helper()
	var r mediaRow
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT data IS NOT NULL, object_key FROM media WHERE id = $1`, id).
		Scan(&r.hasData, &r.key))
	return r
}

func recordShot(t *testing.T, s *store.Store, runID string, number int32, png []byte) string {
	t.Helper()
	now := time.Now()
	recorded, err := s.RecordStep(t.Context(), &wfv1.Step{RunId: runID, Number: number,
		StartTime: timestamppb.New(now), EndTime: timestamppb.New(now), Url: "https://example.com/"},
		&store.Media{ContentType: "image/png", Data: png})
	require.NoError(t, err)
	require.True(t, recorded)
	steps, err := s.ListSteps(t.Context(), runID, number-1, 1)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	return steps[0].ScreenshotMediaId
}

// TestMediaObjects: with an object store, a screenshot is an object under
// its content-addressed key, the row keeps the key and no bytes, and
// GetMedia reads the bytes back; saving the same content again puts the
// same key again and keeps one row and one object.
func TestMediaObjects(t *testing.T) {
	t.Parallel()
	s, pool, srv, fallbacks := newObjectStore(t, -1)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)

	png := []byte("\x89PNG\r\n\x1a\nstep one")
	mediaID := recordShot(t, s, id, 1, png)
	key := store.MediaKey("wf", id, png, "image/png")
	require.Regexp(t, `^wf/runs/`+id+`/[0-9a-f]{64}\.png$`, key)
	require.Equal(t, mediaRow{hasData: false, key: &key}, getMediaRow(t, pool, mediaID))
	data, ct, ok := srv.Object(t, key)
	require.True(t, ok)
	require.Equal(t, png, data)
	require.Equal(t, "image/png", ct)

	m, err := s.GetMedia(ctx, mediaID)
	require.NoError(t, err)
	require.Equal(t, png, m.Data)
	require.Equal(t, "image/png", m.ContentType)
	require.Equal(t, id, m.RunID)
	require.EqualValues(t, 1, m.StepNumber)
	// Whose a medium is can be asked without touching the object store.
	reqs := srv.Requests()
	owner, err := s.MediaRun(ctx, mediaID)
	require.NoError(t, err)
	require.Equal(t, id, owner)
	require.Equal(t, reqs, srv.Requests(), "MediaRun read no object")
	_, err = s.MediaRun(ctx, "00000000-0000-4000-8000-000000000000")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = s.MediaRun(ctx, "urn:uuid:"+mediaID)
	require.ErrorIs(t, err, fault.ErrNotFound)

	// A retried save (same content) re-puts the same key: one object, one row.
	before := srv.Requests()
	again, err := s.SaveMedia(ctx, id, 1, &store.Media{ContentType: "image/png", Data: png})
	require.NoError(t, err)
	require.Equal(t, mediaID, again)
	require.Greater(t, srv.Requests(), before)
	require.Equal(t, []string{key}, srv.Keys(t))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM media`))

	// A prompt run's images and an approval's screenshot go there too.
	jpg := []byte("\xff\xd8\xffprompt image")
	_, err = s.RecordPromptRun(ctx, store.PromptRun{RunID: id, Step: 2, Role: "controller", Provider: "openai", Model: "m",
		Request: []byte(`{"image":"img-1"}`), Start: time.Now(), End: time.Now(),
		Images: []store.PromptImage{{Ref: "img-1", Media: store.Media{ContentType: "image/jpeg", Data: jpg}}}})
	require.NoError(t, err)
	approval, err := s.OpenApproval(ctx, id, &wfv1.ApprovalRequest{StepNumber: 2, Action: "buy", Reason: "payment"},
		&store.Media{ContentType: "image/png", Data: []byte("approval shot")})
	require.NoError(t, err)
	require.NotNil(t, getMediaRow(t, pool, approval.ScreenshotMediaId).key)
	require.Equal(t, 3, count(t, pool, `SELECT count(*) FROM media WHERE object_key IS NOT NULL AND data IS NULL`))
	require.Len(t, srv.Keys(t), 3)
	require.Contains(t, srv.Keys(t), store.MediaKey("wf", id, jpg, "image/jpeg"))
	require.Zero(t, testutil.ToFloat64(fallbacks))

	// Every row holds its bytes or a key.
	_, err = pool.Exec(ctx, `INSERT INTO media (id, run_id, content_type, size_bytes, sha256) VALUES (gen_random_uuid(), $1, 'image/png', 0, '\x00')`, id)
	require.ErrorContains(t, err, "media_data_or_object")
}

// TestMediaFallback: when the upload fails (the store answers 500), the
// screenshot is kept in Postgres, the step is recorded and the fallback is
// counted; once the store answers again, uploads resume.
func TestMediaFallback(t *testing.T) {
	t.Parallel()
	s, pool, srv, fallbacks := newObjectStore(t, -1)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)

	srv.FailAll(http.StatusInternalServerError)
	png := []byte("\x89PNG\r\n\x1a\nduring the outage")
	mediaID := recordShot(t, s, id, 1, png)
	require.Equal(t, mediaRow{hasData: true}, getMediaRow(t, pool, mediaID))
	require.InDelta(t, 1, testutil.ToFloat64(fallbacks), 0)
	m, err := s.GetMedia(ctx, mediaID) // bytes from Postgres: the store's outage does not matter
	require.NoError(t, err)
	require.Equal(t, png, m.Data)

	srv.Heal()
	png2 := []byte("\x89PNG\r\n\x1a\nafter the outage")
	mediaID2 := recordShot(t, s, id, 2, png2)
	require.NotNil(t, getMediaRow(t, pool, mediaID2).key)
	require.InDelta(t, 1, testutil.ToFloat64(fallbacks), 0)

	// Reading an object while the store is down is UNAVAILABLE, and a
	// missing object NOT_FOUND; neither error names the store's insides.
	srv.FailAll(http.StatusServiceUnavailable)
	_, err = s.GetMedia(ctx, mediaID2)
	require.ErrorIs(t, err, fault.ErrUnavailable)
	require.NotContains(t, err.Error(), srv.Endpoint)
	require.NotContains(t, err.Error(), "InternalError")
	srv.Heal()
	srv.Delete(t, store.MediaKey("wf", id, png2, "image/png"))
	_, err = s.GetMedia(ctx, mediaID2)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.NotContains(t, err.Error(), srv.Endpoint)
	require.NotContains(t, err.Error(), "wf/runs")

	// A server with no object store cannot read such a row: UNAVAILABLE.
	_, err = store.New(pool).GetMedia(ctx, mediaID2)
	require.ErrorIs(t, err, fault.ErrUnavailable)
}

// TestMediaFallbackCooldown: after a failed upload, uploads are skipped for
// the cooldown, so an outage costs one failed upload, not one per
// screenshot.
func TestMediaFallbackCooldown(t *testing.T) {
	t.Parallel()
	s, pool, srv, fallbacks := newObjectStore(t, time.Hour)
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)

	srv.FailNext(3, http.StatusInternalServerError) // every try of one upload
	first := recordShot(t, s, id, 1, []byte("one"))
	requests := srv.Requests()
	second := recordShot(t, s, id, 2, []byte("two"))
	require.Equal(t, requests, srv.Requests(), "an upload was tried during the cooldown")
	require.True(t, getMediaRow(t, pool, first).hasData)
	require.True(t, getMediaRow(t, pool, second).hasData)
	require.InDelta(t, 2, testutil.ToFloat64(fallbacks), 0)
	require.Empty(t, srv.Keys(t))
}
