package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// RunByRequest finds a run by its idempotency key within its tenant only:
// another tenant using the same key never sees it.
func TestRunByRequestIsTenantScoped(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	for _, id := range []string{"acme", "other"} {
		_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	q := &fakeQueue{jobID: 1}
	acme, created, err := s.CreateRun(ctx, store.NewRun{Tenant: "acme", RequestID: "req-1", Params: testParams(nil)}, q.enqueue)
	require.NoError(t, err)
	require.True(t, created)

	got, err := s.RunByRequest(ctx, "acme", "req-1")
	require.NoError(t, err)
	require.Equal(t, acme.Id, got.Id)
	require.Equal(t, "acme", got.TenantId)

	_, err = s.RunByRequest(ctx, "other", "req-1")
	require.ErrorIs(t, err, fault.ErrNotFound, "another tenant's key")
	_, err = s.RunByRequest(ctx, "acme", "req-2")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// The other tenant's own run with the same key is its own.
	other, created, err := s.CreateRun(ctx, store.NewRun{Tenant: "other", RequestID: "req-1", Params: testParams(nil)}, q.enqueue)
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, acme.Id, other.Id)
	got, err = s.RunByRequest(ctx, "other", "req-1")
	require.NoError(t, err)
	require.Equal(t, other.Id, got.Id)
	got, err = s.RunByRequest(ctx, "acme", "req-1")
	require.NoError(t, err)
	require.Equal(t, acme.Id, got.Id)
}
