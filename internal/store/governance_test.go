package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// newGovernanceStore returns a store with two tenants, "default" and "other".
func newGovernanceStore(t *testing.T) *store.Store {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	_, err := st.Pool().Exec(context.Background(), `INSERT INTO tenants (id) VALUES ('other')`)
	require.NoError(t, err)
	return st
}

func TestSiteProfiles(t *testing.T) {
	t.Parallel()
	st := newGovernanceStore(t)
	ctx := context.Background()

	in := &wfv1.SiteProfile{
		Domain:              "shop.example",
		Description:         "the shop",
		Consent:             &wfv1.ConsentSelectors{Banner: "#cb", Accept: "#cb .yes", Reject: "#cb .no"},
		Selectors:           map[string]string{"search_box": "input[name=q]"},
		MaxActionsPerMinute: 30,
		PoliteDelay:         durationpb.New(1500e6),
		Notes:               "results load lazily",
		Source:              "server",          // output only: replaced
		UpdateTime:          timestamppb.Now(), // output only: replaced
	}
	put, err := st.PutSiteProfile(ctx, "default", in)
	require.NoError(t, err)
	require.Equal(t, "tenant", put.Source)
	require.NotNil(t, put.UpdateTime)
	require.Equal(t, "server", in.Source, "the caller's message is not modified")

	got, err := st.GetSiteProfile(ctx, "default", "shop.example")
	require.NoError(t, err)
	require.True(t, proto.Equal(put, got), "got %v, want %v", got, put)

	// Replacing keeps one row and bumps the update time.
	in2 := proto.Clone(in).(*wfv1.SiteProfile)
	in2.Notes = "new notes"
	put2, err := st.PutSiteProfile(ctx, "default", in2)
	require.NoError(t, err)
	require.Equal(t, "new notes", put2.Notes)
	require.False(t, put2.UpdateTime.AsTime().Before(put.UpdateTime.AsTime()))

	_, err = st.PutSiteProfile(ctx, "default", &wfv1.SiteProfile{Domain: "*.blog.example"})
	require.NoError(t, err)
	list, err := st.ListSiteProfiles(ctx, "default")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "*.blog.example", list[0].Domain)
	require.Equal(t, "new notes", list[1].Notes)

	// Another tenant sees none of them and cannot delete them.
	other, err := st.ListSiteProfiles(ctx, "other")
	require.NoError(t, err)
	require.Empty(t, other)
	_, err = st.GetSiteProfile(ctx, "other", "shop.example")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorIs(t, st.DeleteSiteProfile(ctx, "other", "shop.example"), fault.ErrNotFound)
	_, err = st.GetSiteProfile(ctx, "default", "shop.example")
	require.NoError(t, err)

	require.NoError(t, st.DeleteSiteProfile(ctx, "default", "shop.example"))
	require.ErrorIs(t, st.DeleteSiteProfile(ctx, "default", "shop.example"), fault.ErrNotFound)
	_, err = st.GetSiteProfile(ctx, "default", "shop.example")
	require.ErrorIs(t, err, fault.ErrNotFound)

	_, err = st.PutSiteProfile(ctx, "nobody", &wfv1.SiteProfile{Domain: "x.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestBrowserProfiles(t *testing.T) {
	t.Parallel()
	st := newGovernanceStore(t)
	ctx := context.Background()
	kr, err := secrets.Parse("k1:" + hex32('a'))
	require.NoError(t, err)

	_, err = st.LoadBrowserProfile(ctx, kr, "default", "main")
	require.ErrorIs(t, err, fault.ErrNotFound)

	require.NoError(t, st.SaveBrowserProfile(ctx, kr, "default", "main", []byte(`{"cookies":[{"name":"sid","value":"s3cr3t"}]}`)))
	got, err := st.LoadBrowserProfile(ctx, kr, "default", "main")
	require.NoError(t, err)
	require.JSONEq(t, `{"cookies":[{"name":"sid","value":"s3cr3t"}]}`, string(got))

	// Sealed at rest: the value is nowhere in the row.
	var sealed []byte
	var keyID string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT sealed, key_id FROM browser_profiles WHERE tenant_id = 'default' AND name = 'main'`).Scan(&sealed, &keyID))
	require.NotContains(t, string(sealed), "s3cr3t")
	require.Equal(t, "k1", keyID)

	// Replaced by the next save; another tenant's profile of the same name
	// is its own.
	require.NoError(t, st.SaveBrowserProfile(ctx, kr, "default", "main", []byte(`{}`)))
	got, err = st.LoadBrowserProfile(ctx, kr, "default", "main")
	require.NoError(t, err)
	require.Equal(t, `{}`, string(got))
	_, err = st.LoadBrowserProfile(ctx, kr, "other", "main")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// Bytes copied to another tenant's row do not open there.
	_, err = st.Pool().Exec(ctx, `INSERT INTO browser_profiles (tenant_id, name, key_id, sealed) VALUES ('other', 'main', 'k1', $1)`, sealed)
	require.NoError(t, err)
	_, err = st.LoadBrowserProfile(ctx, kr, "other", "main")
	require.ErrorIs(t, err, secrets.ErrCorrupt)

	require.ErrorIs(t, st.SaveBrowserProfile(ctx, kr, "nobody", "main", []byte(`{}`)), fault.ErrNotFound)
}

func hex32(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
