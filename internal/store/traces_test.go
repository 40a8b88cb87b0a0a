package store_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

func traceOf(runID, tenant, key string) store.Trace {
	return store.Trace{RunID: runID, TenantID: tenant, Key: key,
		Actions: json.RawMessage(`[{"step":1,"tool":"browser_click","target":{"role":"button","name":"Save"}}]`),
		Final:   json.RawMessage(`{"url":"https://example.com/saved","reason":"saved"}`)}
}

func TestTraces(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	newRun := func(tenant string) string {
		run, _, err := b.s.CreateRun(ctx, store.NewRun{Tenant: tenant, Params: testParams(nil)}, b.q.enqueue)
		require.NoError(t, err)
		return run.Id
	}
	r1, r2, r3, other := newRun("acme"), newRun("acme"), newRun("acme"), newRun("other")

	// Versions count a key's traces; saving again keeps the version.
	t1, err := b.s.SaveTrace(ctx, traceOf(r1, "acme", "k1"))
	require.NoError(t, err)
	require.Equal(t, 1, t1.Version)
	require.Equal(t, "acme", t1.TenantID)
	require.False(t, t1.Pinned)
	require.Empty(t, t1.HealedFrom)
	require.JSONEq(t, string(traceOf(r1, "acme", "k1").Actions), string(t1.Actions))
	again := traceOf(r1, "acme", "k1")
	again.Final = json.RawMessage(`{"url":"https://example.com/again"}`)
	t1, err = b.s.SaveTrace(ctx, again)
	require.NoError(t, err)
	require.Equal(t, 1, t1.Version, "saving a run's trace again keeps its version")
	require.JSONEq(t, `{"url":"https://example.com/again"}`, string(t1.Final))
	healed := traceOf(r2, "acme", "k1")
	healed.HealedFrom = r1
	t2, err := b.s.SaveTrace(ctx, healed)
	require.NoError(t, err)
	require.Equal(t, 2, t2.Version)
	require.Equal(t, r1, t2.HealedFrom)
	t3, err := b.s.SaveTrace(ctx, traceOf(r3, "acme", "k2"))
	require.NoError(t, err)
	require.Equal(t, 1, t3.Version, "another key counts its own versions")

	// A run of another tenant, or no run, takes no trace.
	_, err = b.s.SaveTrace(ctx, traceOf(other, "acme", "k1"))
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.SaveTrace(ctx, traceOf(uuid.NewString(), "acme", "k1"))
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.SaveTrace(ctx, store.Trace{RunID: r1, TenantID: "acme", Key: "k1", Actions: json.RawMessage(`[`), Final: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)

	got, err := b.s.GetTrace(ctx, "acme", r2)
	require.NoError(t, err)
	require.Equal(t, t2.Version, got.Version)
	require.Equal(t, r1, got.HealedFrom)
	for _, id := range []string{r2, "not-a-uuid", uuid.NewString()} {
		_, err = b.s.GetTrace(ctx, "other", id)
		require.ErrorIs(t, err, fault.ErrNotFound, "GetTrace(other, %s)", id)
	}

	// The newest trace of a key, unless one is pinned.
	latest, err := b.s.LatestTrace(ctx, "acme", "k1")
	require.NoError(t, err)
	require.Equal(t, r2, latest.RunID)
	_, err = b.s.LatestTrace(ctx, "other", "k1")
	require.ErrorIs(t, err, fault.ErrNotFound)
	pinned, err := b.s.PinTrace(ctx, "acme", r1, true)
	require.NoError(t, err)
	require.True(t, pinned.Pinned)
	latest, err = b.s.LatestTrace(ctx, "acme", "k1")
	require.NoError(t, err)
	require.Equal(t, r1, latest.RunID, "the pinned trace wins")
	_, err = b.s.PinTrace(ctx, "acme", r2, true)
	require.NoError(t, err)
	got, err = b.s.GetTrace(ctx, "acme", r1)
	require.NoError(t, err)
	require.False(t, got.Pinned, "pinning another trace of the key unpins this one")
	_, err = b.s.PinTrace(ctx, "other", r2, false)
	require.ErrorIs(t, err, fault.ErrNotFound)

	// Lists, filtered and paged, newest first.
	var listed []string
	token := ""
	for {
		page, next, err := b.s.ListTraces(ctx, "acme", store.TraceFilter{}, 2, token)
		require.NoError(t, err)
		for _, tr := range page {
			listed = append(listed, tr.RunID)
		}
		if next == "" {
			break
		}
		token = next
	}
	require.Equal(t, []string{r3, r2, r1}, listed)
	page, _, err := b.s.ListTraces(ctx, "acme", store.TraceFilter{Key: "k1"}, 0, "")
	require.NoError(t, err)
	require.Len(t, page, 2)
	page, _, err = b.s.ListTraces(ctx, "acme", store.TraceFilter{PinnedOnly: true}, 0, "")
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, r2, page[0].RunID)
	page, _, err = b.s.ListTraces(ctx, "other", store.TraceFilter{}, 0, "")
	require.NoError(t, err)
	require.Empty(t, page)
	_, _, err = b.s.ListTraces(ctx, "acme", store.TraceFilter{}, 0, "garbage!!")
	require.ErrorIs(t, err, fault.ErrInvalidArgument)

	// Deleted by its tenant only; deleting the run deletes its trace.
	require.ErrorIs(t, b.s.DeleteTrace(ctx, "other", r3), fault.ErrNotFound)
	require.NoError(t, b.s.DeleteTrace(ctx, "acme", r3))
	require.ErrorIs(t, b.s.DeleteTrace(ctx, "acme", r3), fault.ErrNotFound)
	_, err = b.pool.Exec(ctx, `DELETE FROM runs WHERE id = $1`, r1)
	require.NoError(t, err)
	_, err = b.s.GetTrace(ctx, "acme", r1)
	require.ErrorIs(t, err, fault.ErrNotFound)
}
