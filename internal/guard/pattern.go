package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// maxHostLen is the longest host name accepted, in its ASCII form.
const maxHostLen = 253

// patternKind says how a compiled pattern matches.
type patternKind uint8

const (
	kindAny    patternKind = iota // "*"
	kindExact                     // "example.com", "localhost"
	kindSuffix                    // "*.example.com"
	kindIP                        // "10.0.0.1", "::1"
)

// pattern is a validated, normalised domain pattern.
type pattern struct {
	raw  string      // as configured, for error messages
	kind patternKind //
	name string      // kindExact: the host; kindSuffix: ".example.com"
	addr netip.Addr  // kindIP: unmapped, zone-less
}

// explicit reports whether the pattern names a single host, which is what
// it takes to unlock private networks.
func (pt *pattern) explicit() bool {
	return pt.kind == kindExact || pt.kind == kindIP
}

// match reports whether the normalised host h matches the pattern.
func (pt *pattern) match(h *host) bool {
	switch pt.kind {
	case kindAny:
		return true
	case kindExact:
		return !h.isIP && h.name == pt.name
	case kindSuffix:
		return !h.isIP && len(h.name) > len(pt.name) && strings.HasSuffix(h.name, pt.name)
	case kindIP:
		return h.isIP && h.addr == pt.addr
	}
	return false
}

// host is a normalised URL host or pattern host.
type host struct {
	name string     // lower-case ASCII, no trailing dot; canonical text for IPs
	addr netip.Addr // valid when isIP; unmapped, zone-less
	isIP bool
}

// ValidatePattern reports whether p is a valid allowed or blocked domain
// pattern (see the package documentation for the syntax). The error
// describes what is wrong, for example a scheme, path, port or misplaced
// "*"; it is nil for a valid pattern.
func ValidatePattern(p string) error {
	_, err := compilePattern(p)
	return err
}

// compilePattern validates and normalises one pattern.
func compilePattern(s string) (pattern, error) {
	pt, err := parsePattern(s)
	if err != nil {
		return pattern{}, fmt.Errorf("invalid domain pattern %q: %w", s, err)
	}
	pt.raw = s
	return pt, nil
}

func parsePattern(s string) (pattern, error) {
	if s == "" {
		return pattern{}, errors.New("pattern is empty")
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			return pattern{}, errors.New("pattern must not contain whitespace")
		case unicode.IsControl(r):
			return pattern{}, errors.New("pattern must not contain control characters")
		case r == utf8.RuneError:
			return pattern{}, errors.New("pattern is not valid UTF-8")
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return pattern{}, fmt.Errorf("a pattern is a host name, not a URL: remove the scheme %q", s[:i+3])
	}
	if strings.ContainsAny(s, "/\\") {
		return pattern{}, errors.New("a pattern must not contain a path: use only the host name")
	}
	if s == "*" {
		return pattern{kind: kindAny}, nil
	}
	if strings.Contains(s, "**") {
		return pattern{}, errors.New(`"**" is not supported: use "*" for every host or "*.example.com" for subdomains`)
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return pattern{}, errors.New(`missing "]" after IPv6 address`)
		}
		if rest := s[end+1:]; rest != "" {
			if rest[0] == ':' {
				return pattern{}, portError(rest)
			}
			return pattern{}, fmt.Errorf("unexpected %q after IPv6 address", rest)
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return pattern{}, fmt.Errorf("%q is not a valid IPv6 address", s[1:end])
		}
		return ipPattern(a)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return ipPattern(a)
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if isDigits(s[i+1:]) {
			return pattern{}, portError(s[i:])
		}
		return pattern{}, errors.New(`invalid character ':' (IPv6 addresses look like "::1" or "[::1]")`)
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		if strings.Contains(rest, "*") {
			return pattern{}, misplacedStar()
		}
		h, err := normalizeHost(rest, true)
		if err != nil {
			return pattern{}, err
		}
		if h.isIP {
			return pattern{}, errors.New(`a wildcard cannot be combined with an IP address`)
		}
		return pattern{kind: kindSuffix, name: "." + h.name}, nil
	}
	if strings.Contains(s, "*") {
		return pattern{}, misplacedStar()
	}
	h, err := normalizeHost(s, true)
	if err != nil {
		return pattern{}, err
	}
	if h.isIP {
		return pattern{kind: kindIP, addr: h.addr}, nil
	}
	return pattern{kind: kindExact, name: h.name}, nil
}

func ipPattern(a netip.Addr) (pattern, error) {
	if a.Zone() != "" {
		return pattern{}, errors.New("an IPv6 zone is not allowed in a pattern")
	}
	return pattern{kind: kindIP, addr: a.Unmap()}, nil
}

func portError(port string) error {
	return fmt.Errorf("a pattern must not include a port (remove %q); ports are never part of matching", port)
}

func misplacedStar() error {
	return errors.New(`"*" is only allowed alone or as the whole leading label, as in "*.example.com"`)
}

// normalizeHost turns a host name or IP literal (without brackets or port)
// into its canonical form: IP literals are parsed; names are lower-cased,
// stripped of one trailing dot and converted to punycode. Numeric names are
// interpreted as IPv4 addresses the way browsers do (WHATWG URL standard).
//
// With strict set (patterns), labels must follow the letters-digits-hyphen
// rule and IPv4 addresses must be in canonical dotted-decimal form. Without
// it (URL hosts) underscores and edge hyphens are tolerated, as browsers do.
//
// The common case, an already-canonical ASCII name, does not allocate.
func normalizeHost(s string, strict bool) (host, error) {
	if s == "" {
		return host{}, errors.New("host is empty")
	}
	if mayBeIPLiteral(s) {
		if a, err := netip.ParseAddr(s); err == nil {
			a = a.WithZone("").Unmap()
			return host{name: s, addr: a, isIP: true}, nil
		}
	}
	s = strings.TrimSuffix(s, ".")
	var upper, nonASCII bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			nonASCII = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
		case c == '_' && !strict:
		default:
			return host{}, fmt.Errorf("invalid character %q in host name", c)
		}
	}
	if upper {
		s = strings.ToLower(s)
	}
	if nonASCII || strings.Contains(s, "xn--") {
		// Map and validate internationalised names (and punycode labels,
		// which must decode to valid ones) the way browsers look them up.
		a, err := idna.Lookup.ToASCII(s)
		if err != nil {
			return host{}, fmt.Errorf("invalid internationalised host name: %w", err)
		}
		s = strings.TrimSuffix(a, ".")
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' && !strict) {
				return host{}, fmt.Errorf("invalid character %q in host name", c)
			}
		}
	}
	if s == "" {
		return host{}, errors.New("host is empty")
	}
	if len(s) > maxHostLen {
		return host{}, fmt.Errorf("host name is longer than %d characters", maxHostLen)
	}
	last := ""
	for rest := s; ; {
		label, tail, more := strings.Cut(rest, ".")
		if err := checkLabel(label, strict); err != nil {
			return host{}, err
		}
		if !more {
			last = label
			break
		}
		rest = tail
	}
	if endsInNumber(last) {
		a, ok := parseWHATWGIPv4(s)
		if !ok {
			return host{}, fmt.Errorf("%q is not a valid IPv4 address", s)
		}
		if strict {
			// Only the canonical form is accepted in patterns, and that
			// form was already handled by netip.ParseAddr above.
			return host{}, fmt.Errorf("%q is not a valid IPv4 address; write it in dotted-decimal form (%s)", s, a)
		}
		return host{name: a.String(), addr: a, isIP: true}, nil
	}
	return host{name: s}, nil
}

func checkLabel(label string, strict bool) error {
	switch {
	case label == "":
		return errors.New(`host name has an empty label (to match subdomains use "*.example.com")`)
	case len(label) > 63:
		return fmt.Errorf("host name label %q is longer than 63 characters", label)
	case strict && (label[0] == '-' || label[len(label)-1] == '-'):
		return fmt.Errorf("host name label %q starts or ends with a hyphen", label)
	}
	return nil
}

// endsInNumber implements the WHATWG URL "ends in a number" check on the
// last label of a host: if true, browsers parse the host as IPv4.
func endsInNumber(last string) bool {
	if isDigits(last) {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if !isHex(last[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// parseWHATWGIPv4 implements the WHATWG URL IPv4 parser: one to four
// dot-separated parts, each decimal, octal (leading 0) or hex (0x), the
// last part filling the remaining bytes.
func parseWHATWGIPv4(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for rest := s; ; {
		part, tail, more := strings.Cut(rest, ".")
		if n == len(parts) {
			return netip.Addr{}, false
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if !more {
			break
		}
		rest = tail
	}
	for i := 0; i < n-1; i++ {
		if parts[i] > 255 {
			return netip.Addr{}, false
		}
	}
	if parts[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	v := parts[n-1]
	for i := 0; i < n-1; i++ {
		v += parts[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 1<<32 {
			return 0, false // too large for any part; stop before overflow
		}
	}
	return v, true
}

// mayBeIPLiteral is a cheap filter for netip.ParseAddr, which allocates an
// error for every host name it rejects: IP literals contain a colon (IPv6)
// or only digits and dots (IPv4).
func mayBeIPLiteral(s string) bool {
	if strings.IndexByte(s, ':') >= 0 {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
