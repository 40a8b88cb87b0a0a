package guard

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBlocked matches, with [errors.Is], every error returned because the
// domain policy refused a URL (every [*BlockedError]).
var ErrBlocked = errors.New("blocked by domain policy")

// Reason says which rule of the domain policy refused a URL. Its values are
// stable identifiers suitable for API responses and metrics labels.
type Reason string

// The reasons a URL can be refused.
const (
	// ReasonScheme: the URL's scheme is not http or https (and the URL is
	// not about:blank).
	ReasonScheme Reason = "scheme_blocked"
	// ReasonBlocked: the host matches a blocked domain pattern.
	ReasonBlocked Reason = "domain_blocked"
	// ReasonNotAllowed: the allowed list is non-empty and the host matches
	// none of its patterns.
	ReasonNotAllowed Reason = "domain_not_allowed"
	// ReasonPrivate: the host is, or resolves to, a private network address.
	ReasonPrivate Reason = "private_network_blocked"
	// ReasonInvalid: the URL cannot be parsed or has no valid host.
	ReasonInvalid Reason = "invalid_url"
)

// BlockedError is returned by [Policy.Check] and [Policy.CheckURL] when the
// policy refuses a URL. It matches [ErrBlocked] with [errors.Is].
type BlockedError struct {
	// URL is the refused URL (with any password redacted when it could be
	// parsed).
	URL string
	// Host is the normalised host (lower-case, punycode, canonical IP
	// text); empty when the URL has none or it is invalid.
	Host string
	// Reason is the rule that refused the URL.
	Reason Reason
	// Pattern is the blocked pattern the host matched, when Reason is
	// ReasonBlocked.
	Pattern string

	// detail is extra text for Error: the offending scheme, the parse
	// error, or the private address a host name resolved to.
	detail string
}

// maxURLInMessage bounds how much of the URL Error quotes; data and
// tracking URLs can be very long.
const maxURLInMessage = 200

// Error describes the refusal for humans, for example:
//
//	navigation to "http://10.0.0.1/" blocked: 10.0.0.1 is a private network address (allow it with allowed_domains or WAYFINDER_ALLOW_PRIVATE_NETWORKS=true)
func (e *BlockedError) Error() string {
	u := e.URL
	if len(u) > maxURLInMessage {
		u = u[:maxURLInMessage] + "..."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "navigation to %q blocked: ", u)
	switch e.Reason {
	case ReasonScheme:
		if e.detail != "" {
			fmt.Fprintf(&b, "scheme %q is not allowed (only http and https are)", e.detail)
		} else {
			b.WriteString("the URL has no scheme (only http and https are allowed)")
		}
	case ReasonBlocked:
		fmt.Fprintf(&b, "%s matches blocked_domains pattern %q", e.Host, e.Pattern)
	case ReasonNotAllowed:
		fmt.Fprintf(&b, "%s does not match any allowed_domains pattern", e.Host)
	case ReasonPrivate:
		if e.detail != "" {
			fmt.Fprintf(&b, "%s resolves to private network address %s", e.Host, e.detail)
		} else {
			fmt.Fprintf(&b, "%s is a private network address", e.Host)
		}
		b.WriteString(" (allow it with allowed_domains or WAYFINDER_ALLOW_PRIVATE_NETWORKS=true)")
	case ReasonInvalid:
		b.WriteString("invalid URL")
		if e.detail != "" {
			b.WriteString(": ")
			b.WriteString(e.detail)
		}
	default:
		fmt.Fprintf(&b, "%s", e.Reason)
	}
	return b.String()
}

// Is reports whether target is [ErrBlocked], so that errors.Is(err,
// ErrBlocked) holds for every *BlockedError.
func (e *BlockedError) Is(target error) bool {
	return target == ErrBlocked
}

// PatternError describes one invalid pattern passed to [New]. New returns
// the errors.Join of one *PatternError per invalid pattern; use errors.As,
// or the Unwrap() []error method of the joined error, to inspect them.
type PatternError struct {
	// Field is "allowed_domains" or "blocked_domains".
	Field string
	// Index is the position of the pattern in its list.
	Index int
	// Pattern is the invalid pattern as given.
	Pattern string
	// Err is the validation error, as returned by [ValidatePattern].
	Err error
}

// Error returns e.g. `allowed_domains[2]: invalid domain pattern "a.*.com": ...`.
func (e *PatternError) Error() string {
	return fmt.Sprintf("%s[%d]: %v", e.Field, e.Index, e.Err)
}

// Unwrap returns the validation error.
func (e *PatternError) Unwrap() error { return e.Err }
