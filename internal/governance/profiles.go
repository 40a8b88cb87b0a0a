package governance

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// Sources of a site profile (SiteProfile.source).
const (
	SourceTenant = "tenant"
	SourceServer = "server"
)

// Limits of a site profile.
const (
	MaxProfileNotes       = 2000
	MaxProfileDescription = 1000
	MaxProfileSelectors   = 50
	MaxSelectorLength     = 1000
	MaxPoliteDelay        = time.Minute
	MaxActionsPerMinute   = 600
)

var selectorNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidateProfile checks a site profile, recording violations under
// prefix ("profile" gives "profile.domain"). Output-only fields (source,
// update_time) are not checked.
func ValidateProfile(v *fault.Violations, prefix string, p *wfv1.SiteProfile) {
	field := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	if p == nil {
		v.Add(prefix, "required")
		return
	}
	switch d := p.GetDomain(); {
	case d == "":
		v.Add(field("domain"), "required: a host name (example.com) or a wildcard of its subdomains (*.example.com)")
	case d == "*":
		v.Add(field("domain"), `"*" is not a site; name one domain (example.com or *.example.com)`)
	default:
		if err := guard.ValidatePattern(d); err != nil {
			v.Add(field("domain"), "%v", err)
		}
	}
	if utf8.RuneCountInString(p.GetDescription()) > MaxProfileDescription {
		v.Add(field("description"), "at most %d characters", MaxProfileDescription)
	}
	if utf8.RuneCountInString(p.GetNotes()) > MaxProfileNotes {
		v.Add(field("notes"), "at most %d characters", MaxProfileNotes)
	}
	for name, sel := range map[string]string{"banner": p.GetConsent().GetBanner(),
		"accept": p.GetConsent().GetAccept(), "reject": p.GetConsent().GetReject()} {
		if len(sel) > MaxSelectorLength {
			v.Add(field("consent."+name), "at most %d characters", MaxSelectorLength)
		}
	}
	if len(p.GetSelectors()) > MaxProfileSelectors {
		v.Add(field("selectors"), "at most %d selectors", MaxProfileSelectors)
	}
	for _, name := range slices.Sorted(maps.Keys(p.GetSelectors())) {
		sel := p.GetSelectors()[name]
		switch {
		case !selectorNamePattern.MatchString(name):
			v.Add(field("selectors"), "name %q must match %s", truncate(name, 64), selectorNamePattern)
		case sel == "" || len(sel) > MaxSelectorLength:
			v.Add(field("selectors["+name+"]"), "must be a CSS selector of 1-%d characters", MaxSelectorLength)
		}
	}
	if n := p.GetMaxActionsPerMinute(); n < 0 || n > MaxActionsPerMinute {
		v.Add(field("max_actions_per_minute"), "must be between 0 and %d (got %d)", MaxActionsPerMinute, n)
	}
	if d := p.GetPoliteDelay(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 || d.AsDuration() > MaxPoliteDelay {
			v.Add(field("polite_delay"), "must be between 0s and %s", MaxPoliteDelay)
		}
	}
}

// NormalizeDomain is the form a profile's domain is stored and compared in:
// lower case, without a trailing dot.
func NormalizeDomain(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// Profiles is an immutable set of site profiles, at most one per domain
// pattern, looked up by host. The zero value and nil are empty sets. Do not
// modify the profiles it returns.
type Profiles struct {
	byDomain map[string]*profileEntry
	sorted   []*profileEntry
}

type profileEntry struct {
	p      *wfv1.SiteProfile
	policy *guard.Policy
	// rank orders matches: an exact domain beats any wildcard, a longer
	// wildcard beats a shorter one.
	rank int
}

// NewProfiles returns the set of ps. Profiles must be valid
// (ValidateProfile); a domain given twice is an error.
func NewProfiles(ps []*wfv1.SiteProfile) (*Profiles, error) {
	out := &Profiles{byDomain: make(map[string]*profileEntry, len(ps))}
	var errs []error
	for _, p := range ps {
		d := NormalizeDomain(p.GetDomain())
		if _, dup := out.byDomain[d]; dup {
			errs = append(errs, fmt.Errorf("site profile for %q given twice", d))
			continue
		}
		pol, err := guard.New([]string{d}, nil, true)
		if err != nil || d == "*" {
			errs = append(errs, fmt.Errorf("site profile domain %q: %w", d, errors.Join(err, errors.New("not a single site"))))
			continue
		}
		e := &profileEntry{p: p, policy: pol, rank: len(d) + 1<<16}
		if strings.HasPrefix(d, "*.") {
			e.rank = len(d)
		}
		out.byDomain[d] = e
		out.sorted = append(out.sorted, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(out.sorted, func(i, j int) bool {
		return NormalizeDomain(out.sorted[i].p.GetDomain()) < NormalizeDomain(out.sorted[j].p.GetDomain())
	})
	return out, nil
}

// Len is the number of profiles.
func (ps *Profiles) Len() int {
	if ps == nil {
		return 0
	}
	return len(ps.sorted)
}

// List returns the profiles ordered by domain.
func (ps *Profiles) List() []*wfv1.SiteProfile {
	if ps == nil {
		return nil
	}
	out := make([]*wfv1.SiteProfile, len(ps.sorted))
	for i, e := range ps.sorted {
		out[i] = e.p
	}
	return out
}

// Get returns the profile of exactly the domain pattern d, nil when none.
func (ps *Profiles) Get(d string) *wfv1.SiteProfile {
	if ps == nil {
		return nil
	}
	if e := ps.byDomain[NormalizeDomain(d)]; e != nil {
		return e.p
	}
	return nil
}

// match returns the most specific profile whose domain matches host.
func (ps *Profiles) match(host string) *profileEntry {
	if ps == nil || host == "" {
		return nil
	}
	var best *profileEntry
	for _, e := range ps.sorted {
		if (best == nil || e.rank > best.rank) && e.policy.MatchesHost(host) {
			best = e
		}
	}
	return best
}

// Resolve returns the profile that applies to host: the most specific
// match among the tenant's and the server's profiles (an exact domain
// before a wildcard, a longer wildcard before a shorter one), the tenant's
// winning a tie. Nil when none matches.
func Resolve(host string, tenant, server *Profiles) *wfv1.SiteProfile {
	host = strings.Trim(strings.ToLower(host), "[]")
	t, s := tenant.match(host), server.match(host)
	switch {
	case t == nil && s == nil:
		return nil
	case s == nil || (t != nil && t.rank >= s.rank):
		return t.p
	default:
		return s.p
	}
}

// LoadProfiles reads every *.json file of dir as a SiteProfile (its
// protojson form; unknown fields are errors), validates it and returns the
// set, marked source "server" with the file's modification time. An empty
// dir gives an empty set.
func LoadProfiles(dir string) (*Profiles, error) {
	if dir == "" {
		return &Profiles{}, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("site profiles: %w", err)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("site profiles: %w", err)
	}
	sort.Strings(files)
	var (
		ps   []*wfv1.SiteProfile
		errs []error
	)
	for _, f := range files {
		p, err := loadProfile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps = append(ps, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("site profiles in %s: %w", dir, errors.Join(errs...))
	}
	set, err := NewProfiles(ps)
	if err != nil {
		return nil, fmt.Errorf("site profiles in %s: %w", dir, err)
	}
	return set, nil
}

func loadProfile(path string) (*wfv1.SiteProfile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	p := &wfv1.SiteProfile{}
	if err := protojson.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	var v fault.Violations
	ValidateProfile(&v, "", p)
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	p.Domain = NormalizeDomain(p.Domain)
	p.Source = SourceServer
	p.UpdateTime = timestamppb.New(info.ModTime())
	return p, nil
}

// profileNote tells the model what a site profile knows.
func profileNote(p *wfv1.SiteProfile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Site profile for %s", p.GetDomain())
	if d := p.GetDescription(); d != "" {
		fmt.Fprintf(&b, " (%s)", d)
	}
	b.WriteString(".")
	if sels := p.GetSelectors(); len(sels) > 0 {
		b.WriteString(" Known CSS selectors (usable as target.css):")
		for i, name := range slices.Sorted(maps.Keys(sels)) {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s: %s", name, sels[name])
		}
		b.WriteString(".")
	}
	if c := p.GetConsent(); c.GetBanner() != "" || c.GetAccept() != "" || c.GetReject() != "" {
		b.WriteString(" Cookie banner:")
		for _, kv := range [][2]string{{"banner", c.GetBanner()}, {"accept", c.GetAccept()}, {"reject", c.GetReject()}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s %s", kv[0], kv[1])
			}
		}
		b.WriteString(".")
	}
	if n := p.GetNotes(); n != "" {
		fmt.Fprintf(&b, " Notes: %s", n)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
