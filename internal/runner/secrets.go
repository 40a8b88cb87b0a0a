package runner

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
