package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Signature identifies the kind of page a trace expects, not its data: the
// same order page for order 123 and order 456 has one signature.
type Signature struct {
	// URLPattern is scheme://host/path with numeric, UUID and long hex
	// path segments replaced by "*"; query and fragment dropped.
	URLPattern string `json:"url_pattern"`
	// Structure is a hash of the role skeleton (Roles with counts
	// bucketed as 1, 2–4, 5+), equal for pages that differ only in text
	// and in how many rows they show.
	Structure string `json:"structure"`
	// Roles counts the skeleton's elements: landmarks and dialogs by role,
	// headings by level ("heading/2"), form controls and buttons by role.
	// Links are counted once ("link" is 1 when any is listed): how many
	// a page shows is data. Text is never part of it.
	Roles map[string]int `json:"roles,omitempty"`
}

// Thresholds of Signature.Matches.
const (
	// SignatureMatch is the least combined similarity (0.4 × URL + 0.6 ×
	// structure) for two signatures to be the same page.
	SignatureMatch = 0.75
)

// PageSignature computes the signature of snap's page.
func PageSignature(snap *browser.Snapshot) Signature {
	roles := make(map[string]int)
	for _, e := range snap.Elements {
		if k := skeletonKey(e); k != "" {
			roles[k]++
		}
	}
	if roles["link"] > 0 {
		roles["link"] = 1
	}
	return Signature{URLPattern: URLPattern(snap.Page.URL), Structure: structureHash(roles), Roles: roles}
}

// skeletonKey is the skeleton entry of an element, "" when it is not part
// of the skeleton.
func skeletonKey(e browser.Element) string {
	switch e.Role {
	case "heading":
		return fmt.Sprintf("heading/%d", e.Level)
	case "navigation", "main", "banner", "contentinfo", "complementary", "search", "form", "region",
		"dialog", "alertdialog", "alert", "tablist", "menu", "menubar", "table", "grid":
		return e.Role
	case "textbox", "searchbox", "combobox", "listbox", "checkbox", "radio", "switch", "slider", "spinbutton", "button", "link":
		return e.Role
	}
	return ""
}

func structureHash(roles map[string]int) string {
	keys := make([]string, 0, len(roles))
	for k := range roles {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s:%d\n", k, bucket(roles[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func bucket(n int) int {
	switch {
	case n <= 1:
		return n
	case n <= 4:
		return 2
	}
	return 5
}

// Matches says whether other is the same kind of page, with a similarity
// in [0, 1]: 0.4 × the URL patterns' similarity (1 when equal, else the
// share of equal path segments; 0 for another scheme or host) + 0.6 × the
// structures' similarity (1 for equal hashes; else 0.7 × the overlap of
// the role sets + 0.3 × the weighted overlap of log-scaled counts, so an
// extra banner or two more buttons cost little). Same page when the
// similarity is at least SignatureMatch and the host agrees.
func (s Signature) Matches(other Signature) (bool, float64) {
	u := urlSim(s.URLPattern, other.URLPattern)
	st := 1.0
	if s.Structure != other.Structure {
		st = structureSim(s.Roles, other.Roles)
	}
	sim := 0.4*u + 0.6*st
	return u > 0 && sim >= SignatureMatch, sim
}

func structureSim(a, b map[string]int) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	keys := make(map[string]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted) // a fixed order keeps the float sums deterministic
	both, lo, hi := 0, 0.0, 0.0
	for _, k := range sorted {
		if a[k] > 0 && b[k] > 0 {
			both++
		}
		x, y := math.Log2(1+float64(a[k])), math.Log2(1+float64(b[k]))
		lo += min(x, y)
		hi += max(x, y)
	}
	return 0.7*float64(both)/float64(len(sorted)) + 0.3*lo/hi
}

// urlSim compares two URL patterns: 1 when equal, 0 when scheme or host
// differ, else the share of equal path segments of the longer path.
func urlSim(a, b string) float64 {
	if a == b {
		return 1
	}
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil || ua.Scheme != ub.Scheme || ua.Host != ub.Host {
		return 0
	}
	sa := strings.Split(strings.Trim(ua.Path, "/"), "/")
	sb := strings.Split(strings.Trim(ub.Path, "/"), "/")
	same := 0
	for i := range min(len(sa), len(sb)) {
		if sa[i] == sb[i] {
			same++
		}
	}
	return float64(same) / float64(max(len(sa), len(sb)))
}

// URLPattern reduces a URL to scheme://host/path with id segments (all
// digits, a UUID, or 16+ hex digits) as "*"; query and fragment dropped.
// A URL that does not parse is returned without query and fragment.
func URLPattern(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			return raw[:i]
		}
		return raw
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		if idSegment(s) {
			segs[i] = "*"
		}
	}
	out := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.Join(segs, "/")
	if u.Scheme == "" && u.Host == "" {
		out = strings.Join(segs, "/")
	}
	return out
}

// idSegment says whether a path segment names one record: all digits, a
// UUID, or a long hex string.
func idSegment(s string) bool {
	if s == "" {
		return false
	}
	digits, hexOnly := true, true
	for _, r := range s {
		if !unicode.IsDigit(r) {
			digits = false
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF-", r) {
			hexOnly = false
		}
	}
	if digits {
		return true
	}
	if !hexOnly {
		return false
	}
	if len(s) == 36 && strings.Count(s, "-") == 4 {
		return true // UUID
	}
	return !strings.Contains(s, "-") && len(s) >= 16
}
