package steps

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// keyNames are the key names browser_press_key accepts (lower case),
// spelled as sent.
var keyNames = map[string]string{
	"enter": "Enter", "return": "Enter", "tab": "Tab", "backspace": "Backspace", "delete": "Delete",
	"del": "Delete", "escape": "Escape", "esc": "Escape", "space": "Space", "spacebar": "Space",
	"arrowup": "ArrowUp", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft", "arrowright": "ArrowRight",
	"up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight", "home": "Home",
	"end": "End", "pageup": "PageUp", "pagedown": "PageDown", "insert": "Insert", "capslock": "CapsLock",
	"contextmenu": "ContextMenu", "shift": "Shift", "control": "Control", "ctrl": "Control", "alt": "Alt",
	"option": "Alt", "meta": "Meta", "cmd": "Meta", "command": "Meta", "super": "Meta",
	"f1": "F1", "f2": "F2", "f3": "F3", "f4": "F4", "f5": "F5", "f6": "F6", "f7": "F7", "f8": "F8",
	"f9": "F9", "f10": "F10", "f11": "F11", "f12": "F12",
}

var (
	chordSpaceRe = regexp.MustCompile(`\s*\+\s*`)
	timesRe      = regexp.MustCompile(`(?i)\s+(?:(twice)|(\d+)\s+times)$`)
	twoWordKeyRe = regexp.MustCompile(`(?i)\b(?:page (up|down)|arrow (up|down|left|right)|(up|down|left|right) arrow|caps lock)\b`)
)

// keySpec reads keys ("Enter", "the Escape key", "Control + A", "Tab Tab")
// and spells them as browser_press_key wants; false when s is not keys.
func keySpec(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if after, ok := cutPhrase(s, "the"); ok {
		s = after
	}
	s = unquote(s)
	times := 1
	if m := timesRe.FindStringSubmatch(s); m != nil {
		s = s[:len(s)-len(m[0])]
		switch n, _ := strconv.Atoi(m[2]); {
		case m[1] != "":
			times = 2
		case n >= 1 && n <= 20:
			times = n
		default:
			return "", false
		}
	}
	l := lowerASCII(s)
	for _, suf := range []string{" keys", " key"} {
		if strings.HasSuffix(l, suf) {
			s = strings.TrimSpace(s[:len(s)-len(suf)])
			break
		}
	}
	s = twoWordKeyRe.ReplaceAllStringFunc(s, func(m string) string {
		f := strings.Fields(lowerASCII(m))
		switch f[0] {
		case "page", "caps":
			return f[0] + f[1]
		case "arrow":
			return "arrow" + f[1]
		}
		return "arrow" + f[0]
	})
	s = chordSpaceRe.ReplaceAllString(s, "+")
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "", false
	}
	for i, f := range fields {
		parts := strings.Split(f, "+")
		if strings.HasSuffix(f, "++") {
			parts = append(strings.Split(strings.TrimSuffix(f, "++"), "+"), "+")
		}
		for j, p := range parts {
			if name, ok := keyNames[lowerASCII(p)]; ok {
				parts[j] = name
			} else if len([]rune(p)) != 1 {
				return "", false
			}
		}
		fields[i] = strings.Join(parts, "+")
	}
	keys := strings.Join(fields, " ")
	return strings.TrimSpace(strings.Repeat(keys+" ", times)), true
}

var (
	hostRe   = regexp.MustCompile(`(?i)^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,})(?::\d+)?(?:[/?#]\S*)?$`)
	schemeRe = regexp.MustCompile(`(?i)^https?://\S+$`)
)

// isURLish reports whether s is a URL, a scheme-less host ("example.com/x")
// or a path ("/reports", "../x", "?q=1").
func isURLish(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t") {
		return false
	}
	for _, p := range []string{"/", "./", "../", "?"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return schemeRe.MatchString(s) || hostRe.MatchString(s)
}

// splitAt cuts s at the keyword seps (tried in order) into what comes
// before and after it. A leading quoted part is never cut; otherwise the
// first occurrence is used, or the last when last is set.
func splitAt(s string, seps []string, last bool) (before, after string, ok bool) {
	s = strings.TrimSpace(s)
	if inner, rest, q := leadingQuoted(s); q {
		for _, sep := range seps {
			if a, found := cutPhrase(rest, sep); found {
				return `"` + inner + `"`, strings.TrimSpace(a), true
			}
		}
		return "", "", false
	}
	l := lowerASCII(s)
	for _, sep := range seps {
		k := " " + sep + " "
		i := strings.Index(l, k)
		if last {
			i = strings.LastIndex(l, k)
		}
		if i > 0 {
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(k):]), true
		}
	}
	return "", "", false
}

// quotePairs are the opening quotes and their closers.
var quotePairs = map[rune]rune{'"': '"', '\'': '\'', '“': '”', '‘': '’', '«': '»'}

// leadingQuoted splits `"a b" rest` into a b and rest. A closing ' must not
// be followed by a letter, so "'Don't save'" reads whole.
func leadingQuoted(s string) (inner, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	open, _ := utf8.DecodeRuneInString(s)
	closer, isQuote := quotePairs[open]
	if !isQuote {
		return "", "", false
	}
	body := s[len(string(open)):]
	for i, r := range body {
		if r != closer {
			continue
		}
		after := body[i+len(string(r)):]
		if closer == '\'' && after != "" && isWordByte(after[0]) {
			continue
		}
		return body[:i], after, true
	}
	return "", "", false
}

// unquote removes quotes around the whole of s.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if inner, rest, ok := leadingQuoted(s); ok && rest == "" {
		return inner
	}
	return s
}

// stripQuotes removes every quoted part's quotes ("next to "Red mug"" →
// next to Red mug).
func stripQuotes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || s[i-1] == ' ' {
			if inner, rest, ok := leadingQuoted(s[i:]); ok {
				b.WriteString(inner)
				i = len(s) - len(rest)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return strings.TrimSpace(b.String())
}

// cutWord splits off the first word.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], strings.TrimSpace(s[i+1:])
	}
	return s, ""
}

// cutPhrase cuts the words p (case-insensitive) from the start of s when
// they end there or are followed by a space or comma.
func cutPhrase(s, p string) (string, bool) {
	s = strings.TrimSpace(s)
	if !hasPhrase(s, p) {
		return s, false
	}
	return strings.TrimSpace(s[len(p):]), true
}

func hasPhrase(s, p string) bool {
	if len(s) < len(p) || lowerASCII(s[:len(p)]) != p {
		return false
	}
	return len(s) == len(p) || s[len(p)] == ' ' || s[len(p)] == ',' || s[len(p)] == ':'
}

// trimWord drops the word w from the start of s.
func trimWord(s, w string) string {
	r, _ := cutPhrase(s, w)
	return r
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// lowerASCII lower-cases ASCII letters only, so byte offsets stay valid.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
