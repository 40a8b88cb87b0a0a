package governance

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestBrowserStateRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := StateFromCookies([]browser.Cookie{
		{Name: "sid", Value: "v1", Domain: "127.0.0.1", Path: "/", HTTPOnly: true, SameSite: "Lax"},
		{Name: "pref", Value: "v2", Domain: ".example.com", Path: "/app", Secure: true, Expires: now.Add(time.Hour)},
		{Name: "host6", Value: "v3", Domain: "::1", Secure: true},
		{Name: "old", Value: "x", Domain: "example.com", Expires: now.Add(-time.Second)},
		{Name: "", Value: "x", Domain: "example.com"},
		{Name: "nodomain", Value: "x"},
	}, now)
	require.Len(t, st.Cookies, 3)
	st.AddLocalStorage("http://127.0.0.1:8080", map[string]string{"k": "v"})
	st.AddLocalStorage("http://127.0.0.1:9090", nil)

	raw, err := st.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalState(raw)
	require.NoError(t, err)
	require.Equal(t, st, back)

	cookies, storage := back.Rules(now)
	require.Equal(t, []browser.NetworkCookie{
		{Name: "sid", Value: "v1", URL: "http://127.0.0.1/", Path: "/", HTTPOnly: true, SameSite: "Lax"},
		{Name: "pref", Value: "v2", Domain: "example.com", Path: "/app", Secure: true, Expires: now.Add(time.Hour)},
		{Name: "host6", Value: "v3", URL: "https://[::1]/", Secure: true},
	}, cookies)
	require.Equal(t, []browser.OriginStorage{{Origin: "http://127.0.0.1:8080", Items: map[string]string{"k": "v"}}}, storage)

	// Expired by the time of restoring.
	cookies, _ = back.Rules(now.Add(2 * time.Hour))
	require.Len(t, cookies, 2)

	_, err = UnmarshalState([]byte("{"))
	require.Error(t, err)
}

func TestBrowserStateDropsLargestStorageFirst(t *testing.T) {
	t.Parallel()
	st := &BrowserState{Cookies: []StateCookie{{Name: "a", Value: "b", Domain: "x.example"}}}
	st.AddLocalStorage("https://big.example", map[string]string{"k": strings.Repeat("x", MaxStateBytes)})
	st.AddLocalStorage("https://small.example", map[string]string{"k": "v"})
	raw, err := st.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalState(raw)
	require.NoError(t, err)
	require.Len(t, back.LocalStorage, 1)
	require.Equal(t, "https://small.example", back.LocalStorage[0].Origin)
	require.Len(t, st.LocalStorage, 2, "the state itself is left alone")

	huge := &BrowserState{Cookies: []StateCookie{{Name: "a", Value: strings.Repeat("x", MaxStateBytes), Domain: "x.example"}}}
	_, err = huge.Marshal()
	require.Error(t, err)
}

func TestBrowserStateLimits(t *testing.T) {
	t.Parallel()
	var cs []browser.Cookie
	for range MaxStateCookies + 5 {
		cs = append(cs, browser.Cookie{Name: "c", Value: "v", Domain: "x.example"})
	}
	st := StateFromCookies(cs, time.Now())
	require.Len(t, st.Cookies, MaxStateCookies)
	for range MaxStateOrigins + 5 {
		st.AddLocalStorage("https://x.example", map[string]string{"k": "v"})
	}
	require.Len(t, st.LocalStorage, MaxStateOrigins)

	bad := &BrowserState{LocalStorage: []OriginStorage{{Origin: "file:///etc", Items: map[string]string{"k": "v"}}, {Origin: "https://ok.example/", Items: map[string]string{"k": "v"}}}}
	_, storage := bad.Rules(time.Now())
	require.Len(t, storage, 1)
}
