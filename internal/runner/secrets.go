package runner

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// Secret is a value the model may use only by reference: it sees the
// placeholder {{Name}} (told that a login is available), and the runner
// substitutes the value inside a fill or type action, only on a page whose
// domain matches Domains. The value is redacted (replaced by its
// placeholder) from everything the runner shows the model or reports.
type Secret struct {
	// Name is the placeholder's name, [a-z0-9_.]{1,64}, e.g. "username",
	// "password" or "app.example.com.password".
	Name string
	// Value is the secret.
	Value string
	// Domains are domain patterns ("example.com", "*.example.com", "*")
	// of the pages the value may be typed into; at least one.
	Domains []string
	// Hint describes the login to the model ("login for app.example.com"),
	// without the value.
	Hint string
}

// CodeSecretNotAllowed is the outcome of a fill or type action refused
// because a placeholder's secret may not be typed on the page's domain (or
// the placeholder names no secret of the run). The value is not typed.
const CodeSecretNotAllowed = "secret_not_allowed"

// Placeholder is how the model writes the secret named name: {{name}}.
func Placeholder(name string) string { return "{{" + name + "}}" }

// placeholderPattern finds placeholders in a fill or type value; spaces
// inside the braces and upper case are forgiven.
var placeholderPattern = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.]{1,64})\s*\}\}`)

// secretNamePattern is the syntax of Secret.Name.
var secretNamePattern = regexp.MustCompile(`^[a-z0-9_.]{1,64}$`)

// secrets are a run's secrets, ready to be substituted.
type secrets struct {
	byName map[string]*compiledSecret
	order  []*compiledSecret
}

type compiledSecret struct {
	Secret
	domains *guard.Policy
}

// compileSecrets validates ss: names are unique and well formed, and
// every secret has a value and valid domain patterns.
func compileSecrets(ss []Secret) (*secrets, error) {
	out := &secrets{byName: map[string]*compiledSecret{}}
	for _, s := range ss {
		if !secretNamePattern.MatchString(s.Name) {
			return nil, fmt.Errorf("secret name %q: want [a-z0-9_.]{1,64}", s.Name)
		}
		if out.byName[s.Name] != nil {
			return nil, fmt.Errorf("secret %s is given twice", Placeholder(s.Name))
		}
		if s.Value == "" {
			return nil, fmt.Errorf("secret %s has no value", Placeholder(s.Name))
		}
		if len(s.Domains) == 0 {
			return nil, fmt.Errorf("secret %s has no domains to be typed on", Placeholder(s.Name))
		}
		// Private addresses are the run policy's business, not this
		// check's: the secret's domains only say where it may be typed.
		pol, err := guard.New(s.Domains, nil, true)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", Placeholder(s.Name), err)
		}
		c := &compiledSecret{Secret: s, domains: pol}
		out.byName[s.Name] = c
		out.order = append(out.order, c)
	}
	return out, nil
}

// guidance tells the model that a login is available and how to use it.
// It names placeholders, hints and domains, never values.
func (s *secrets) guidance() string {
	if len(s.order) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("LOGIN: credentials are available as placeholders. To enter one, use its placeholder, written exactly as shown with the double braces, as the \"value\" of browser_fill or the \"text\" of browser_type; the browser types the real value, which you never see (fields show the placeholder instead). Never guess, invent or ask for credentials, and do not use placeholders in other tools. A placeholder is typed only on its domains; elsewhere the action is refused with " + CodeSecretNotAllowed + ".\n")
	for _, c := range s.order {
		fmt.Fprintf(&b, "- %s", Placeholder(c.Name))
		if c.Hint != "" {
			fmt.Fprintf(&b, ": %s", c.Hint)
		}
		fmt.Fprintf(&b, " (on %s)\n", strings.Join(c.Domains, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// secretRefusal is why a value's placeholders may not be typed.
type secretRefusal struct {
	code, msg string
}

// substitute returns value with each placeholder replaced by its secret's
// value, when every placeholder names a secret of the run that may be
// typed on a page at pageURL. used reports whether value had placeholders.
// The refusal's message names placeholders and domains, never values.
func (s *secrets) substitute(value, pageURL string) (out string, used bool, refused *secretRefusal) {
	if s == nil || len(s.order) == 0 {
		return value, false, nil
	}
	matches := placeholderPattern.FindAllStringSubmatchIndex(value, -1)
	if len(matches) == 0 {
		return value, false, nil
	}
	host, scheme := "", ""
	if u, err := url.Parse(pageURL); err == nil {
		host, scheme = u.Hostname(), u.Scheme
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		name := strings.ToLower(value[m[2]:m[3]])
		c := s.byName[name]
		if c == nil {
			return "", true, &secretRefusal{code: string(browser.CodeInvalidParams),
				msg: fmt.Sprintf("%s names no credential of this run; the placeholders are %s. Type a placeholder exactly as listed; never guess a credential.",
					strings.TrimSpace(value[m[0]:m[1]]), strings.Join(s.names(), ", "))}
		}
		if (scheme != "http" && scheme != "https") || !c.domains.MatchesHost(host) {
			where := host
			if where == "" {
				where = "this page"
			}
			return "", true, &secretRefusal{code: CodeSecretNotAllowed,
				msg: fmt.Sprintf("not typed: %s may only be typed on %s, and this page is on %s. Make sure you are on the right site's login page.",
					Placeholder(c.Name), strings.Join(c.Domains, ", "), where)}
		}
		b.WriteString(value[last:m[0]])
		b.WriteString(c.Value)
		last = m[1]
	}
	b.WriteString(value[last:])
	return b.String(), true, nil
}

func (s *secrets) names() []string {
	out := make([]string, 0, len(s.order))
	for _, c := range s.order {
		out = append(out, Placeholder(c.Name))
	}
	return out
}

// fillSecrets substitutes the secrets in a fill or type action right
// before it runs, checking the domain of the page it runs on at that
// moment. act.Value holds the value from then on; the caller's record of
// the call keeps the placeholders.
func (ru *run) fillSecrets(ctx context.Context, act *browser.Action) *secretRefusal {
	if ru.secrets == nil || (act.Kind != browser.ActionFill && act.Kind != browser.ActionType) {
		return nil
	}
	if !placeholderPattern.MatchString(act.Value) {
		return nil
	}
	pageURL := ru.currentURL(ctx)
	if pageURL == "" {
		return &secretRefusal{code: string(browser.CodeActionFailed), msg: "not typed: the page's address could not be read"}
	}
	v, _, refused := ru.secrets.substitute(act.Value, pageURL)
	if refused != nil {
		// The page's address may carry a value a page echoed.
		refused.msg = ru.redact.String(refused.msg)
		return refused
	}
	act.Value = v
	return nil
}

// currentURL is the address of the page actions run on: asked of the
// page, or else as its tab last reported it.
func (ru *run) currentURL(ctx context.Context) string {
	if u, _, err := ru.page.Location(ctx); err == nil && u != "" {
		return u
	}
	id := ru.page.TabID()
	for _, t := range ru.page.Tabs() {
		if t.ID == id {
			return t.URL
		}
	}
	return ""
}
