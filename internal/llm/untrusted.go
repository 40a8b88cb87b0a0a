package llm

import "regexp"

// The markers that fence untrusted page content (names, text, HTML from a
// website) in prompts. Prompts tell the model that what is between them is
// data, not instructions.
const (
	UntrustedOpen  = "<untrusted_page_content>"
	UntrustedClose = "</untrusted_page_content>"
)

// untrustedMarker matches anything a model could read as one of the
// markers: any case, "_", "-" or spaces between the words, look-alike
// angle brackets, or the bare words.
var untrustedMarker = regexp.MustCompile(`(?i)(?:[<＜‹〈]\s*/?\s*)?untrusted[\s_\-]*page[\s_\-]*content(?:\s*[>＞›〉])?`)

// UntrustedMarker returns the pattern of marker-like text, which callers
// replace in untrusted content so the page cannot close (or open) the
// fence.
func UntrustedMarker() *regexp.Regexp { return untrustedMarker }
