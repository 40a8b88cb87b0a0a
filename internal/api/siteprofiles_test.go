package api

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// memProfiles is an in-memory siteProfileStore with the store's contract
// (one profile per tenant and domain; fault.ErrNotFound). The real store
// is tested against Postgres in internal/store.
type memProfiles struct {
	mu sync.Mutex
	m  map[string]map[string]*wfv1.SiteProfile
}

func (s *memProfiles) PutSiteProfile(_ context.Context, tn string, p *wfv1.SiteProfile) (*wfv1.SiteProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]*wfv1.SiteProfile{}
	}
	if s.m[tn] == nil {
		s.m[tn] = map[string]*wfv1.SiteProfile{}
	}
	c := proto.Clone(p).(*wfv1.SiteProfile)
	c.Source, c.UpdateTime = "tenant", timestamppb.Now()
	s.m[tn][c.Domain] = c
	return c, nil
}

func (s *memProfiles) ListSiteProfiles(_ context.Context, tn string) ([]*wfv1.SiteProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*wfv1.SiteProfile
	for _, p := range s.m[tn] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Domain < out[j].Domain })
	return out, nil
}

func (s *memProfiles) DeleteSiteProfile(_ context.Context, tn, domain string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[tn][domain] == nil {
		return fmt.Errorf("site profile %q: %w", domain, fault.ErrNotFound)
	}
	delete(s.m[tn], domain)
	return nil
}

func asTenant(id string) context.Context {
	return tenant.With(context.Background(), tenant.Caller{Tenant: id, KeyID: "key-" + id})
}

func newSiteProfileService(t *testing.T) *SiteProfileService {
	t.Helper()
	server, err := governance.NewProfiles([]*wfv1.SiteProfile{
		{Domain: "shared.example", Notes: "server", Source: governance.SourceServer},
		{Domain: "*.wide.example", Notes: "server wide", Source: governance.SourceServer},
	})
	require.NoError(t, err)
	return &SiteProfileService{store: &memProfiles{}, server: server}
}

func TestSiteProfileServiceTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newSiteProfileService(t)
	a, b := asTenant("a"), asTenant("b")

	put, err := s.PutSiteProfile(a, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "Shop.Example.", Notes: "a's"}})
	require.NoError(t, err)
	require.Equal(t, "shop.example", put.Domain)
	require.Equal(t, "tenant", put.Source)

	got, err := s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.NoError(t, err)
	require.Equal(t, "a's", got.Notes)

	// B neither reads, lists nor deletes A's profile.
	_, err = s.GetSiteProfile(b, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	list, err := s.ListSiteProfiles(b, &wfv1.ListSiteProfilesRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"*.wide.example", "shared.example"}, domains(list.Profiles))
	_, err = s.DeleteSiteProfile(b, &wfv1.DeleteSiteProfileRequest{Domain: "shop.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	got, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.NoError(t, err)
	require.Equal(t, "a's", got.Notes)

	// B's own profile of the same domain is B's.
	_, err = s.PutSiteProfile(b, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "shop.example", Notes: "b's"}})
	require.NoError(t, err)
	got, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.NoError(t, err)
	require.Equal(t, "a's", got.Notes)

	_, err = s.DeleteSiteProfile(a, &wfv1.DeleteSiteProfileRequest{Domain: "shop.example"})
	require.NoError(t, err)
	_, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	got, err = s.GetSiteProfile(b, &wfv1.GetSiteProfileRequest{Domain: "shop.example"})
	require.NoError(t, err)
	require.Equal(t, "b's", got.Notes)
}

func TestSiteProfileServiceServerProfiles(t *testing.T) {
	t.Parallel()
	s := newSiteProfileService(t)
	a := asTenant("a")

	// Every tenant sees the server's; a host gets the profile that applies.
	got, err := s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shared.example"})
	require.NoError(t, err)
	require.Equal(t, "server", got.Notes)
	got, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "www.wide.example"})
	require.NoError(t, err)
	require.Equal(t, "server wide", got.Notes)
	_, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "*.shared.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)

	// The tenant's own overrides it, in Get and List; deleting it brings
	// the server's back; the server's cannot be deleted.
	_, err = s.PutSiteProfile(a, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "shared.example", Notes: "mine"}})
	require.NoError(t, err)
	got, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shared.example"})
	require.NoError(t, err)
	require.Equal(t, "mine", got.Notes)
	list, err := s.ListSiteProfiles(a, &wfv1.ListSiteProfilesRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"*.wide.example", "shared.example"}, domains(list.Profiles))
	require.Equal(t, "mine", list.Profiles[1].Notes)
	_, err = s.DeleteSiteProfile(a, &wfv1.DeleteSiteProfileRequest{Domain: "shared.example"})
	require.NoError(t, err)
	_, err = s.DeleteSiteProfile(a, &wfv1.DeleteSiteProfileRequest{Domain: "shared.example"})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	got, err = s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "shared.example"})
	require.NoError(t, err)
	require.Equal(t, "server", got.Notes)

	// A service without server profiles.
	bare := &SiteProfileService{store: &memProfiles{}}
	list, err = bare.ListSiteProfiles(a, &wfv1.ListSiteProfilesRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Profiles)
	_, err = bare.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: "x.example"})
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestSiteProfileServiceValidation(t *testing.T) {
	t.Parallel()
	s := newSiteProfileService(t)
	a := asTenant("a")
	for _, tc := range []struct {
		name  string
		req   *wfv1.PutSiteProfileRequest
		field string
	}{
		{"no profile", &wfv1.PutSiteProfileRequest{}, "profile"},
		{"no domain", &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{}}, "profile.domain"},
		{"star", &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "*"}}, "profile.domain"},
		{"rate", &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "x.example", MaxActionsPerMinute: 1000}}, "profile.max_actions_per_minute"},
	} {
		_, err := s.PutSiteProfile(a, tc.req)
		var re *fault.RequestError
		require.ErrorAs(t, err, &re, tc.name)
		require.Equal(t, tc.field, re.Violations[0].Field, tc.name)
	}
	for _, d := range []string{"", "*", "https://x.example/", "a b"} {
		_, err := s.GetSiteProfile(a, &wfv1.GetSiteProfileRequest{Domain: d})
		require.ErrorIs(t, err, fault.ErrInvalidArgument, d)
		_, err = s.DeleteSiteProfile(a, &wfv1.DeleteSiteProfileRequest{Domain: d})
		require.ErrorIs(t, err, fault.ErrInvalidArgument, d)
	}

	// The caller's request is not modified.
	req := &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "UPPER.example"}}
	_, err := s.PutSiteProfile(a, req)
	require.NoError(t, err)
	require.Equal(t, "UPPER.example", req.Profile.Domain)
}

func TestSiteProfileServiceLimit(t *testing.T) {
	t.Parallel()
	s := newSiteProfileService(t)
	a := asTenant("a")
	for i := range MaxTenantSiteProfiles {
		_, err := s.PutSiteProfile(a, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: fmt.Sprintf("s%d.example", i)}})
		require.NoError(t, err)
	}
	_, err := s.PutSiteProfile(a, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "one-more.example"}})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	_, err = s.PutSiteProfile(a, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "s1.example", Notes: "replaced"}})
	require.NoError(t, err, "replacing one is fine")
	_, err = s.PutSiteProfile(asTenant("b"), &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "one-more.example"}})
	require.NoError(t, err, "the limit is per tenant")
}

func domains(ps []*wfv1.SiteProfile) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Domain
	}
	return out
}
