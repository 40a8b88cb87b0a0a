package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
)

// TestTenantConcurrencyLimit: a tenant at its max_concurrent_runs starts no
// further run until one ends; other tenants are unaffected.
func TestTenantConcurrencyLimit(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	one := int32(1)
	_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: "small"})
	require.NoError(t, err)
	_, err = s.UpdateTenant(ctx, "small", "", &one)
	require.NoError(t, err)
	q := &fakeQueue{jobID: 1}
	newRun := func(tenant string) string {
		run, _, err := s.CreateRun(ctx, store.NewRun{Tenant: tenant, Params: testParams(nil)}, q.enqueue)
		require.NoError(t, err)
		return run.Id
	}
	first, second, other := newRun("small"), newRun("small"), newRun("default")

	_, execute, err := s.StartRun(ctx, first)
	require.NoError(t, err)
	require.True(t, execute)
	_, _, err = s.StartRun(ctx, second)
	require.ErrorIs(t, err, store.ErrTenantBusy)
	run, err := s.GetRun(ctx, second)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, run.Status, "a refused start changed the run")
	require.Zero(t, run.Attempts)

	_, execute, err = s.StartRun(ctx, other)
	require.NoError(t, err)
	require.True(t, execute, "another tenant is limited too")

	// A resumed run (already running) always continues.
	_, execute, err = s.StartRun(ctx, first)
	require.NoError(t, err)
	require.True(t, execute)

	_, err = s.FinishRun(ctx, first, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	_, execute, err = s.StartRun(ctx, second)
	require.NoError(t, err)
	require.True(t, execute)
}

// TestCredentialSealing: values open only with the tenant and name they
// were sealed for, and ResealCredentials moves them to a new primary key.
func TestCredentialSealing(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	old, err := secrets.Parse("old:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	require.NoError(t, err)
	_, err = s.CreateCredential(ctx, old, store.NewCredential{Tenant: "default", Name: "db",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, Values: map[string]string{"username": "u", "password": "p4ssw0rd!"}})
	require.NoError(t, err)

	oc, err := s.OpenCredential(ctx, old, "default", "db")
	require.NoError(t, err)
	require.Equal(t, "p4ssw0rd!", oc.Values["password"])
	require.Equal(t, wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, oc.Type)
	c, err := s.GetCredential(ctx, "default", "db")
	require.NoError(t, err)
	require.NotNil(t, c.LastUsedTime)

	_, err = s.OpenCredential(ctx, old, "other-tenant", "db")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// Sealed bytes copied to another name do not open.
	_, err = pool.Exec(ctx, `INSERT INTO credentials (tenant_id, name, type, fields, key_id, sealed)
		SELECT tenant_id, 'copy', type, fields, key_id, sealed FROM credentials WHERE name = 'db'`)
	require.NoError(t, err)
	_, err = s.OpenCredential(ctx, old, "default", "copy")
	require.ErrorIs(t, err, secrets.ErrCorrupt)
	require.NoError(t, s.DeleteCredential(ctx, "default", "copy"))

	rotated, err := secrets.Parse("new:1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100,old:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	require.NoError(t, err)
	n, err := s.ResealCredentials(ctx, rotated)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	newOnly, err := secrets.Parse("new:1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100")
	require.NoError(t, err)
	oc, err = s.OpenCredential(ctx, newOnly, "default", "db")
	require.NoError(t, err)
	require.Equal(t, "p4ssw0rd!", oc.Values["password"])
}
