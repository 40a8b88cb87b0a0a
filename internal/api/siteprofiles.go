package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// MaxTenantSiteProfiles is how many site profiles one tenant may keep.
const MaxTenantSiteProfiles = 500

// siteProfileStore is what the service needs of the store.
type siteProfileStore interface {
	PutSiteProfile(ctx context.Context, tenant string, p *wfv1.SiteProfile) (*wfv1.SiteProfile, error)
	ListSiteProfiles(ctx context.Context, tenant string) ([]*wfv1.SiteProfile, error)
	DeleteSiteProfile(ctx context.Context, tenant, domain string) error
}

// SiteProfileService implements wayfinder.v1.SiteProfileService: a
// tenant's own site profiles, over the server's (from
// WAYFINDER_SITE_PROFILES_DIR), which every tenant sees and none can change.
type SiteProfileService struct {
	wfv1.UnimplementedSiteProfileServiceServer
	store  siteProfileStore
	server *governance.Profiles
}

// NewSiteProfileService returns the site profile service; server are the
// profiles of the server's directory (nil: none).
func NewSiteProfileService(st *store.Store, server *governance.Profiles) *SiteProfileService {
	return &SiteProfileService{store: st, server: server}
}

// PutSiteProfile implements wayfinder.v1.SiteProfileService.
func (s *SiteProfileService) PutSiteProfile(ctx context.Context, req *wfv1.PutSiteProfileRequest) (*wfv1.SiteProfile, error) {
	var v fault.Violations
	governance.ValidateProfile(&v, "profile", req.GetProfile())
	if err := v.Err(); err != nil {
		return nil, err
	}
	p := proto.Clone(req.GetProfile()).(*wfv1.SiteProfile)
	p.Domain = governance.NormalizeDomain(p.GetDomain())
	own, err := s.store.ListSiteProfiles(ctx, tenant.ID(ctx))
	if err != nil {
		return nil, err
	}
	if len(own) >= MaxTenantSiteProfiles && !slices.ContainsFunc(own, func(o *wfv1.SiteProfile) bool { return o.GetDomain() == p.Domain }) {
		return nil, fmt.Errorf("%w: the tenant has %d site profiles, the most it may keep; delete one first",
			fault.ErrFailedPrecondition, len(own))
	}
	return s.store.PutSiteProfile(ctx, tenant.ID(ctx), p)
}

// GetSiteProfile implements wayfinder.v1.SiteProfileService: the tenant's
// own profile of the domain, else the server's; for a host name without
// one, the profile that applies to it in runs (the most specific match).
func (s *SiteProfileService) GetSiteProfile(ctx context.Context, req *wfv1.GetSiteProfileRequest) (*wfv1.SiteProfile, error) {
	d, err := checkProfileDomain(req.GetDomain())
	if err != nil {
		return nil, err
	}
	own, err := s.tenantProfiles(ctx)
	if err != nil {
		return nil, err
	}
	if p := own.Get(d); p != nil {
		return p, nil
	}
	if p := s.server.Get(d); p != nil {
		return p, nil
	}
	if !strings.HasPrefix(d, "*.") {
		if p := governance.Resolve(d, own, s.server); p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no site profile applies to %q: %w", d, fault.ErrNotFound)
}

// ListSiteProfiles implements wayfinder.v1.SiteProfileService: the
// tenant's own profiles and the server's it does not override, by domain.
func (s *SiteProfileService) ListSiteProfiles(ctx context.Context, _ *wfv1.ListSiteProfilesRequest) (*wfv1.ListSiteProfilesResponse, error) {
	own, err := s.store.ListSiteProfiles(ctx, tenant.ID(ctx))
	if err != nil {
		return nil, err
	}
	out := slices.Clone(own)
	for _, p := range s.server.List() {
		if !slices.ContainsFunc(own, func(o *wfv1.SiteProfile) bool { return o.GetDomain() == p.GetDomain() }) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *wfv1.SiteProfile) int { return strings.Compare(a.GetDomain(), b.GetDomain()) })
	return &wfv1.ListSiteProfilesResponse{Profiles: out}, nil
}

// DeleteSiteProfile implements wayfinder.v1.SiteProfileService. Only the
// tenant's own profiles can be deleted; the server's come from its
// directory.
func (s *SiteProfileService) DeleteSiteProfile(ctx context.Context, req *wfv1.DeleteSiteProfileRequest) (*emptypb.Empty, error) {
	d, err := checkProfileDomain(req.GetDomain())
	if err != nil {
		return nil, err
	}
	err = s.store.DeleteSiteProfile(ctx, tenant.ID(ctx), d)
	if errors.Is(err, fault.ErrNotFound) && s.server.Get(d) != nil {
		return nil, fmt.Errorf("%w: the site profile of %s is the server's (WAYFINDER_SITE_PROFILES_DIR) and cannot be deleted through the API; put one of the tenant's own to override it",
			fault.ErrFailedPrecondition, d)
	}
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// tenantProfiles returns the caller's own profiles as a set.
func (s *SiteProfileService) tenantProfiles(ctx context.Context) (*governance.Profiles, error) {
	own, err := s.store.ListSiteProfiles(ctx, tenant.ID(ctx))
	if err != nil {
		return nil, err
	}
	return governance.NewProfiles(own)
}

// checkProfileDomain validates and normalises the domain of a Get or
// Delete request.
func checkProfileDomain(d string) (string, error) {
	var v fault.Violations
	switch {
	case d == "":
		v.Add("domain", "required: a host name (example.com) or a wildcard of its subdomains (*.example.com)")
	case d == "*":
		v.Add("domain", `"*" is not a site`)
	default:
		if err := guard.ValidatePattern(d); err != nil {
			v.Add("domain", "%v", err)
		}
	}
	if err := v.Err(); err != nil {
		return "", err
	}
	return governance.NormalizeDomain(d), nil
}
