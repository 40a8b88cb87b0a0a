package governance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

func mustProfiles(t *testing.T, ps ...*wfv1.SiteProfile) *Profiles {
	t.Helper()
	set, err := NewProfiles(ps)
	require.NoError(t, err)
	return set
}

func TestValidateProfile(t *testing.T) {
	t.Parallel()
	ok := func() *wfv1.SiteProfile {
		return &wfv1.SiteProfile{Domain: "example.com", Selectors: map[string]string{"search_box": "input[name=q]"},
			MaxActionsPerMinute: 60, PoliteDelay: durationpb.New(2 * time.Second), Notes: "n"}
	}
	for _, tc := range []struct {
		name   string
		mutate func(p *wfv1.SiteProfile)
		field  string // "" for valid
	}{
		{"valid", func(*wfv1.SiteProfile) {}, ""},
		{"wildcard", func(p *wfv1.SiteProfile) { p.Domain = "*.example.com" }, ""},
		{"ip", func(p *wfv1.SiteProfile) { p.Domain = "127.0.0.1" }, ""},
		{"no domain", func(p *wfv1.SiteProfile) { p.Domain = "" }, "profile.domain"},
		{"star", func(p *wfv1.SiteProfile) { p.Domain = "*" }, "profile.domain"},
		{"url", func(p *wfv1.SiteProfile) { p.Domain = "https://example.com" }, "profile.domain"},
		{"port", func(p *wfv1.SiteProfile) { p.Domain = "example.com:80" }, "profile.domain"},
		{"notes", func(p *wfv1.SiteProfile) { p.Notes = strings.Repeat("ü", MaxProfileNotes+1) }, "profile.notes"},
		{"description", func(p *wfv1.SiteProfile) { p.Description = strings.Repeat("x", MaxProfileDescription+1) }, "profile.description"},
		{"rate", func(p *wfv1.SiteProfile) { p.MaxActionsPerMinute = 601 }, "profile.max_actions_per_minute"},
		{"negative rate", func(p *wfv1.SiteProfile) { p.MaxActionsPerMinute = -1 }, "profile.max_actions_per_minute"},
		{"delay", func(p *wfv1.SiteProfile) { p.PoliteDelay = durationpb.New(2 * time.Minute) }, "profile.polite_delay"},
		{"negative delay", func(p *wfv1.SiteProfile) { p.PoliteDelay = durationpb.New(-time.Second) }, "profile.polite_delay"},
		{"selector name", func(p *wfv1.SiteProfile) { p.Selectors = map[string]string{"bad name": "x"} }, "profile.selectors"},
		{"empty selector", func(p *wfv1.SiteProfile) { p.Selectors = map[string]string{"x": ""} }, "profile.selectors[x]"},
		{"consent selector", func(p *wfv1.SiteProfile) {
			p.Consent = &wfv1.ConsentSelectors{Accept: strings.Repeat("a", MaxSelectorLength+1)}
		}, "profile.consent.accept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := ok()
			tc.mutate(p)
			var v fault.Violations
			ValidateProfile(&v, "profile", p)
			err := v.Err()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			require.Equal(t, tc.field, re.Violations[0].Field)
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	server := mustProfiles(t,
		&wfv1.SiteProfile{Domain: "example.com", Notes: "server apex"},
		&wfv1.SiteProfile{Domain: "*.example.com", Notes: "server wildcard"},
		&wfv1.SiteProfile{Domain: "shop.example.com", Notes: "server shop"},
		&wfv1.SiteProfile{Domain: "127.0.0.1", Notes: "server loopback"},
	)
	tenant := mustProfiles(t,
		&wfv1.SiteProfile{Domain: "*.example.com", Notes: "tenant wildcard"},
		&wfv1.SiteProfile{Domain: "*.eu.example.com", Notes: "tenant eu"},
		&wfv1.SiteProfile{Domain: "Other.Example.", Notes: "tenant other"},
	)
	for host, want := range map[string]string{
		"example.com":         "server apex",
		"www.example.com":     "tenant wildcard", // same pattern: the tenant's wins
		"shop.example.com":    "server shop",     // an exact domain beats a wildcard
		"a.eu.example.com":    "tenant eu",       // the longer wildcard wins
		"eu.example.com":      "tenant wildcard",
		"other.example":       "tenant other",
		"OTHER.example":       "tenant other",
		"127.0.0.1":           "server loopback",
		"unrelated.example":   "",
		"":                    "",
		"notexample.com":      "",
		"example.com.evil.io": "",
	} {
		got := Resolve(host, tenant, server)
		if want == "" {
			require.Nil(t, got, host)
			continue
		}
		require.NotNil(t, got, host)
		require.Equal(t, want, got.Notes, host)
	}
	require.Nil(t, Resolve("example.com", nil, nil))
	require.Equal(t, "server apex", Resolve("example.com", nil, server).Notes)
	require.Equal(t, "tenant other", tenant.Get("other.example").Notes)
	require.Nil(t, tenant.Get("x.other.example"))
	require.Equal(t, 3, tenant.Len())
	require.Equal(t, "*.eu.example.com", tenant.List()[0].Domain)
}

func TestNewProfilesDuplicates(t *testing.T) {
	t.Parallel()
	_, err := NewProfiles([]*wfv1.SiteProfile{{Domain: "example.com"}, {Domain: "EXAMPLE.com."}})
	require.ErrorContains(t, err, "given twice")
}

func TestLoadProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	write("shop.json", `{"domain": "Shop.Example", "consent": {"banner": "#cb", "accept": "#cb .ok"},
		"selectors": {"search_box": "input[name=q]"}, "maxActionsPerMinute": 20, "politeDelay": "1.5s", "notes": "lazy"}`)
	write("blog.json", `{"domain": "*.blog.example", "max_actions_per_minute": 5}`)
	write("README.md", `not a profile`)

	set, err := LoadProfiles(dir)
	require.NoError(t, err)
	require.Equal(t, 2, set.Len())
	shop := set.Get("shop.example")
	require.NotNil(t, shop)
	require.Equal(t, "shop.example", shop.Domain)
	require.Equal(t, SourceServer, shop.Source)
	require.NotNil(t, shop.UpdateTime)
	require.Equal(t, 1500*time.Millisecond, shop.PoliteDelay.AsDuration())
	require.EqualValues(t, 5, Resolve("a.blog.example", nil, set).MaxActionsPerMinute)

	empty, err := LoadProfiles("")
	require.NoError(t, err)
	require.Zero(t, empty.Len())

	_, err = LoadProfiles(filepath.Join(dir, "missing"))
	require.Error(t, err)

	write("bad.json", `{"domain": "x.example", "unknown_field": 1}`)
	write("invalid.json", `{"domain": "*", "notes": "x"}`)
	_, err = LoadProfiles(dir)
	require.ErrorContains(t, err, "bad.json")
	require.ErrorContains(t, err, "invalid.json")
	require.NoError(t, os.Remove(filepath.Join(dir, "bad.json")))
	require.NoError(t, os.Remove(filepath.Join(dir, "invalid.json")))

	write("dup.json", `{"domain": "shop.example"}`)
	_, err = LoadProfiles(dir)
	require.ErrorContains(t, err, "given twice")
}

func TestProfileNote(t *testing.T) {
	t.Parallel()
	note := profileNote(&wfv1.SiteProfile{Domain: "shop.example", Description: "the shop",
		Selectors: map[string]string{"search_box": "input[name=q]", "add": "button.add"},
		Consent:   &wfv1.ConsentSelectors{Banner: "#cb", Accept: "#cb .ok"}, Notes: "results load lazily"})
	require.Equal(t, `Site profile for shop.example (the shop). Known CSS selectors (usable as target.css): add: button.add; search_box: input[name=q]. Cookie banner: banner #cb accept #cb .ok. Notes: results load lazily`, note)
	require.Equal(t, "Site profile for x.example.", profileNote(&wfv1.SiteProfile{Domain: "x.example"}))
}
