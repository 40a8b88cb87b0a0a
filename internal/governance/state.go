package governance

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// ProfileNamePattern is what a persistent profile's name
// (BrowserConfig.profile) must match.
var ProfileNamePattern = regexp.MustCompile(`^[a-z0-9_.-]{1,63}$`)

// Limits of a saved browser state.
const (
	// MaxStateBytes bounds a saved state; past it, the localStorage of
	// the largest origins is left out until it fits.
	MaxStateBytes = 4 << 20
	// MaxStateCookies bounds the cookies saved.
	MaxStateCookies = 3000
	// MaxStateOrigins bounds the origins whose localStorage is saved.
	MaxStateOrigins = 50
)

// BrowserState is what a persistent profile keeps of a browser context:
// its cookies and the localStorage of the origins a run visited.
type BrowserState struct {
	Cookies      []StateCookie   `json:"cookies,omitempty"`
	LocalStorage []OriginStorage `json:"local_storage,omitempty"`
}

// StateCookie is one saved cookie.
type StateCookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Domain is the cookie's domain as the browser reports it: with a
	// leading dot for a domain cookie, without for a host-only one.
	Domain   string    `json:"domain"`
	Path     string    `json:"path,omitempty"`
	Secure   bool      `json:"secure,omitempty"`
	HTTPOnly bool      `json:"http_only,omitempty"`
	SameSite string    `json:"same_site,omitempty"`
	Expires  time.Time `json:"expires,omitzero"`
}

// OriginStorage is the localStorage of one origin.
type OriginStorage struct {
	Origin string            `json:"origin"`
	Items  map[string]string `json:"items"`
}

// StateFromCookies builds a state from the session's cookies
// (get_cookies), leaving out expired ones and those without a name or
// domain.
func StateFromCookies(cs []browser.Cookie, now time.Time) *BrowserState {
	st := &BrowserState{}
	for _, c := range cs {
		if c.Name == "" || strings.TrimPrefix(c.Domain, ".") == "" {
			continue
		}
		if !c.Expires.IsZero() && !c.Expires.After(now) {
			continue
		}
		st.Cookies = append(st.Cookies, StateCookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Expires: c.Expires})
		if len(st.Cookies) == MaxStateCookies {
			break
		}
	}
	return st
}

// AddLocalStorage adds the localStorage of an origin (nothing for an
// empty one).
func (st *BrowserState) AddLocalStorage(origin string, items map[string]string) {
	if len(items) == 0 || len(st.LocalStorage) >= MaxStateOrigins {
		return
	}
	st.LocalStorage = append(st.LocalStorage, OriginStorage{Origin: origin, Items: items})
}

// Marshal encodes the state, leaving out the localStorage of the largest
// origins while it is larger than MaxStateBytes. It fails only when the
// cookies alone are too large.
func (st *BrowserState) Marshal() ([]byte, error) {
	s := *st
	s.LocalStorage = slices.Clone(st.LocalStorage)
	for {
		raw, err := json.Marshal(&s)
		if err != nil {
			return nil, fmt.Errorf("encode browser state: %w", err)
		}
		if len(raw) <= MaxStateBytes {
			return raw, nil
		}
		if len(s.LocalStorage) == 0 {
			return nil, fmt.Errorf("browser state of %d bytes is larger than %d bytes", len(raw), MaxStateBytes)
		}
		largest := 0
		for i := range s.LocalStorage {
			if storageSize(s.LocalStorage[i]) > storageSize(s.LocalStorage[largest]) {
				largest = i
			}
		}
		s.LocalStorage = slices.Delete(s.LocalStorage, largest, largest+1)
	}
}

func storageSize(o OriginStorage) int {
	n := 0
	for k, v := range o.Items {
		n += len(k) + len(v)
	}
	return n
}

// UnmarshalState decodes a state Marshal encoded.
func UnmarshalState(raw []byte) (*BrowserState, error) {
	var st BrowserState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decode browser state: %w", err)
	}
	return &st, nil
}

// Rules are the state as a browser context's starting cookies and
// localStorage (browser.NetworkRules). A host-only cookie is restored for
// its host (by URL), a domain cookie for its domain; expired cookies and
// invalid origins are left out.
func (st *BrowserState) Rules(now time.Time) ([]browser.NetworkCookie, []browser.OriginStorage) {
	var cookies []browser.NetworkCookie
	for _, c := range st.Cookies {
		if c.Name == "" || (!c.Expires.IsZero() && !c.Expires.After(now)) {
			continue
		}
		nc := browser.NetworkCookie{Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure,
			HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Expires: c.Expires}
		switch host := strings.TrimPrefix(c.Domain, "."); {
		case host == "":
			continue
		case strings.HasPrefix(c.Domain, "."):
			nc.Domain = host
		default:
			scheme := "http"
			if c.Secure {
				scheme = "https"
			}
			nc.URL = (&url.URL{Scheme: scheme, Host: hostForURL(host), Path: "/"}).String()
		}
		switch nc.SameSite {
		case "", "Strict", "Lax", "None":
		default:
			nc.SameSite = ""
		}
		cookies = append(cookies, nc)
	}
	var storage []browser.OriginStorage
	for _, o := range st.LocalStorage {
		if validOrigin(o.Origin) != nil || len(o.Items) == 0 {
			continue
		}
		storage = append(storage, browser.OriginStorage{Origin: o.Origin, Items: o.Items})
	}
	return cookies, storage
}

// hostForURL brackets an IPv6 literal.
func hostForURL(h string) string {
	if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
		return "[" + h + "]"
	}
	return h
}

// validOrigin checks "scheme://host[:port]" with an http(s) scheme.
func validOrigin(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("not an http(s) origin")
	}
	return nil
}
