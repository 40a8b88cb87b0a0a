package governance

import (
	"bufio"
	"bytes"
	"net/url"
	"strings"
)

// UserAgent is the product token Wayfinder looks for in robots.txt groups
// (case-insensitive); a file without a Wayfinder group applies its "*"
// group.
const UserAgent = "Wayfinder"

// maxRobotsBytes is how much of a robots.txt is parsed (RFC 9309 asks for at
// least 500 KiB).
const maxRobotsBytes = 512 << 10

// robotsRules is a parsed robots.txt: the rules of the group that applies to
// Wayfinder. The zero value allows everything.
type robotsRules struct {
	rules []robotsRule
	// disallowAll is set for a robots.txt that could not be fetched for a
	// server error (RFC 9309 §2.3.1.4: assume complete disallow).
	disallowAll bool
}

type robotsRule struct {
	allow   bool
	pattern string // normalised; may contain * and a final $
}

// allowAll is the robots.txt of a site without one (404 and other 4xx).
var allowAll = &robotsRules{}

// disallowAll is what an unreachable robots.txt (5xx, network error) means.
var disallowAll = &robotsRules{disallowAll: true}

// parseRobots parses a robots.txt for the user agent agent (a product token
// such as "Wayfinder"): the rules of every group naming agent
// (case-insensitive), else of every "*" group (RFC 9309 §2.2.1). Lines that
// are not user-agent, allow or disallow are ignored, as is anything past
// 512 KiB.
func parseRobots(body []byte, agent string) *robotsRules {
	if len(body) > maxRobotsBytes {
		body = body[:maxRobotsBytes]
	}
	agent = strings.ToLower(agent)
	var (
		own, star   []robotsRule
		ownSeen     bool
		inAgents    bool // the previous rule-less lines were user-agent lines
		forOwn      bool // the current group names agent
		forStar     bool // the current group names *
		sawAnyGroup bool
	)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), maxRobotsBytes)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		switch key {
		case "user-agent":
			if !inAgents {
				forOwn, forStar = false, false
			}
			inAgents, sawAnyGroup = true, true
			token := strings.ToLower(value)
			// The product token is the name up to the first character
			// that cannot be part of it ("Wayfinder/1.0").
			if i := strings.IndexFunc(token, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r == '-' || r == '_' || r == '*')
			}); i >= 0 {
				token = token[:i]
			}
			switch token {
			case agent:
				forOwn, ownSeen = true, true
			case "*":
				forStar = true
			}
		case "allow", "disallow":
			inAgents = false
			if !sawAnyGroup || value == "" {
				continue // a rule outside any group, or "Disallow:" (allows all)
			}
			r := robotsRule{allow: key == "allow", pattern: normalisePattern(value)}
			if forOwn {
				own = append(own, r)
			}
			if forStar {
				star = append(star, r)
			}
		default:
			// sitemap, crawl-delay and others end nothing: RFC 9309 lets
			// them appear inside a group.
		}
	}
	if ownSeen {
		return &robotsRules{rules: own}
	}
	return &robotsRules{rules: star}
}

// Allowed reports whether the URL's path (with its query) may be visited:
// the rule with the longest matching pattern decides, allow winning a tie;
// no matching rule allows. /robots.txt itself is always allowed.
func (r *robotsRules) Allowed(u *url.URL) bool {
	if r == nil {
		return true
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if path == "/robots.txt" {
		return true
	}
	if r.disallowAll {
		return false
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	path = normalisePath(path)
	best, allowed := -1, true
	for _, rule := range r.rules {
		if !match(rule.pattern, path) {
			continue
		}
		n := len(rule.pattern)
		if n > best || (n == best && rule.allow) {
			best, allowed = n, rule.allow
		}
	}
	return allowed
}

// match reports whether pattern (with * for any run of characters and a
// final $ for the end) matches a prefix of path, or all of it with $.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	pos := len(parts[0])
	if len(parts) == 1 {
		return !anchored || pos == len(path)
	}
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last && anchored {
			// The last piece must end the path, after pos.
			return len(path)-len(p) >= pos && strings.HasSuffix(path, p)
		}
		j := strings.Index(path[pos:], p)
		if j < 0 {
			return false
		}
		pos += j + len(p)
	}
	return true
}

// normalisePattern brings a rule's path into the form paths are compared
// in: non-ASCII characters percent-encoded as UTF-8, escapes of unreserved
// characters decoded, other escapes in upper case.
func normalisePattern(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 0x80 || c == ' ' {
			b.WriteString("%" + strings.ToUpper(hex2(c)))
			continue
		}
		b.WriteByte(c)
	}
	return normalisePath(b.String())
}

// normalisePath decodes the escapes of unreserved characters (RFC 3986:
// letters, digits, - . _ ~) and upper-cases the hex digits of the others,
// so /a%7eb and /a~b compare equal.
func normalisePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			b.WriteByte(p[i])
			continue
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(p[i+1:i+3]))
		}
		i += 2
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
