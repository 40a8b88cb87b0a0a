package steps

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// got is a Step without its bookkeeping, for comparing.
type got struct {
	Kind          StepKind
	Target, Value string
	Role          string
}

func view(steps []Step) []got {
	out := make([]got, len(steps))
	for i, s := range steps {
		out[i] = got{s.Kind, s.Target, s.Value, s.Role}
	}
	return out
}

func TestParseForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want got
	}{
		// click
		{`Click Sign in`, got{Click, "Sign in", "", ""}},
		{`click "Sign in"`, got{Click, "Sign in", "", ""}},
		{`Click on the “Sign in” button`, got{Click, "Sign in", "", "button"}},
		{`Tap the Reports link`, got{Click, "Reports", "", "link"}},
		{`Press the Submit button`, got{Click, "Submit", "", "button"}},
		{`Press Sign in`, got{Click, "Sign in", "", ""}},
		{`Open the Reports link`, got{Click, "Reports", "", "link"}},
		{`Go to the Billing page`, got{Click, "Billing", "", "link"}},
		{`Switch to the Settings tab`, got{Click, "Settings", "", "tab"}},
		{`Select the Monthly tab`, got{Click, "Monthly", "", "tab"}},
		{`Click 'Don't save'`, got{Click, "Don't save", "", ""}},
		{`Click "Remove" next to "Red mug"`, got{Click, "Remove next to Red mug", "", ""}},
		// fill
		{`Type alice into Username`, got{Fill, "Username", "alice", ""}},
		{`type "alice smith" into the "Full name" field`, got{Fill, "Full name", "alice smith", "textbox"}},
		{`Type "dive into go" into Search`, got{Fill, "Search", "dive into go", ""}},
		{`Enter secret in Password`, got{Fill, "Password", "secret", ""}},
		{`Enter alice@example.com in the Sign in email box`, got{Fill, "Sign in email", "alice@example.com", "textbox"}},
		{`Fill Username with alice`, got{Fill, "Username", "alice", ""}},
		{`Fill in "Search in site" with "go, then stop"`, got{Fill, "Search in site", "go, then stop", ""}},
		{`Fill "Coupon" with ""`, got{Fill, "Coupon", "", ""}},
		{`Set Quantity to 3`, got{Fill, "Quantity", "3", ""}},
		{`Clear the Notes field`, got{Fill, "Notes", "", "textbox"}},
		{`Type hello`, got{Fill, "", "hello", ""}},
		{`Type {{login.password}} into Password.`, got{Fill, "Password", "{{login.password}}", ""}},
		{`Step 2 - Then, click Next!`, got{Click, "Next", "", ""}},
		// select
		{`Select Blue from Color`, got{Select, "Color", "Blue", ""}},
		{`Choose "United States" in the Country dropdown`, got{Select, "Country", "United States", "combobox"}},
		{`pick Large from "Size"`, got{Select, "Size", "Large", ""}},
		// check
		{`Check Remember me`, got{Check, "Remember me", "", ""}},
		{`Tick the "I agree" checkbox`, got{Check, "I agree", "", "checkbox"}},
		{`Uncheck Newsletter`, got{Uncheck, "Newsletter", "", ""}},
		// keys
		{`Press Enter`, got{Press, "", "Enter", ""}},
		{`press the escape key`, got{Press, "", "Escape", ""}},
		{`Hit Control + a`, got{Press, "", "Control+a", ""}},
		{`Press Ctrl+Shift+K`, got{Press, "", "Control+Shift+K", ""}},
		{`Press Page Down`, got{Press, "", "PageDown", ""}},
		{`Press Tab twice`, got{Press, "", "Tab Tab", ""}},
		{`Press the down arrow key`, got{Press, "", "ArrowDown", ""}},
		// open
		{`Open https://example.com/login`, got{Open, "https://example.com/login", "", ""}},
		{`Go to /reports`, got{Open, "/reports", "", ""}},
		{`Navigate to "../settings?tab=2"`, got{Open, "../settings?tab=2", "", ""}},
		{`Visit example.com/pricing`, got{Open, "example.com/pricing", "", ""}},
		{`Open localhost:8080`, got{Open, "localhost:8080", "", ""}},
		// wait
		{`Wait for Welcome`, got{WaitText, "", "Welcome", ""}},
		{`Wait for "Saved" to appear`, got{WaitText, "", "Saved", ""}},
		{`Wait until Order placed appears`, got{WaitText, "", "Order placed", ""}},
		{`Wait 3 seconds`, got{WaitTime, "", "3", ""}},
		{`Wait for 2s`, got{WaitTime, "", "2", ""}},
		{`wait 500 ms`, got{WaitTime, "", "0.5", ""}},
		{`Wait 1 minute`, got{WaitTime, "", "60", ""}},
		{`Wait for the page to load`, got{WaitTime, "", "1", ""}},
		// expect
		{`Expect text Welcome, alice`, got{ExpectText, "", "Welcome, alice", ""}},
		{`Expect text "Has been saved"`, got{ExpectText, "", "Has been saved", ""}},
		{`Verify the page shows "Total: $42"`, got{ExpectText, "", "Total: $42", ""}},
		{`Expect to see Dashboard`, got{ExpectText, "", "Dashboard", ""}},
		{`Expect "Welcome"`, got{ExpectText, "", "Welcome", ""}},
		{`Make sure "Saved" is shown`, got{ExpectText, "", "Saved", ""}},
		{`Check that the text "Saved" is visible`, got{ExpectText, "", "Saved", ""}},
		{`Expect URL /dashboard`, got{ExpectURL, "", "/dashboard", ""}},
		{`Expect the URL to contain "/reports?week="`, got{ExpectURL, "", "/reports?week=", ""}},
		{`Assert url: https://*.example.com/*`, got{ExpectURL, "", "https://*.example.com/*", ""}},
		{`Check the URL contains /done`, got{ExpectURL, "", "/done", ""}},
		{`Expect title Dashboard`, got{ExpectTitle, "", "Dashboard", ""}},
		{`Ensure the page title is "Reports – Acme"`, got{ExpectTitle, "", "Reports – Acme", ""}},
		// scroll
		{`Scroll down`, got{Scroll, "", "down", ""}},
		{`Scroll up a bit`, got{Scroll, "", "up", ""}},
		{`Scroll to the bottom of the page`, got{Scroll, "", "bottom", ""}},
		{`Scroll to the Newsletter field`, got{Scroll, "Newsletter", "", "textbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			steps, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, []got{tt.want}, view(steps))
			require.Equal(t, 1, steps[0].Line)
		})
	}
}

func TestParseScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		want  []got
		lines []int
		texts []string
	}{
		{
			name: "numbered, bullets, blank lines, comments and a heading",
			in: "Steps:\n1. Open https://app.test/login\n\n2) Type alice into Username\n# the password\n" +
				"- Type \"s3cret\" into Password\n* Then press Enter.\nStep 5: Expect text Welcome\n(6) Expect URL /home",
			want: []got{
				{Open, "https://app.test/login", "", ""},
				{Fill, "Username", "alice", ""},
				{Fill, "Password", "s3cret", ""},
				{Press, "", "Enter", ""},
				{ExpectText, "", "Welcome", ""},
				{ExpectURL, "", "/home", ""},
			},
			lines: []int{2, 4, 6, 7, 8, 9},
			texts: []string{"Open https://app.test/login", "Type alice into Username", `Type "s3cret" into Password`,
				"press Enter", "Expect text Welcome", "Expect URL /home"},
		},
		{
			name: "several steps on one line",
			in:   "Click Sign in, type alice into Username and press Enter. Then wait 2 seconds; expect text Hi",
			want: []got{
				{Click, "Sign in", "", ""},
				{Fill, "Username", "alice", ""},
				{Press, "", "Enter", ""},
				{WaitTime, "", "2", ""},
				{ExpectText, "", "Hi", ""},
			},
			lines: []int{1, 1, 1, 1, 1},
			texts: []string{"Click Sign in", "type alice into Username", "press Enter", "wait 2 seconds", "expect text Hi"},
		},
		{
			name:  "a break inside quotes or before a non-verb does not split",
			in:    "Expect text \"Saved. Click here\"\nClick Terms and Conditions\nType \"a; then click b\" into Note",
			want:  []got{{ExpectText, "", "Saved. Click here", ""}, {Click, "Terms and Conditions", "", ""}, {Fill, "Note", "a; then click b", ""}},
			lines: []int{1, 2, 3},
		},
		{
			name:  "a period in a URL, CRLF line ends",
			in:    "Open example.com/a.b. Then click Next\r\nScroll down",
			want:  []got{{Open, "example.com/a.b", "", ""}, {Click, "Next", "", ""}, {Scroll, "", "down", ""}},
			lines: []int{1, 1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steps, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, view(steps))
			for i, s := range steps {
				require.Equal(t, tt.lines[i], s.Line, "step %d", i)
				if tt.texts != nil {
					require.Equal(t, tt.texts[i], s.Text, "step %d", i)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		line     int
		text     string
		reason   string
	}{
		{"empty goal", "  \n\n", 0, "", "no steps"},
		{"only comments", "# nothing\n// here", 0, "", "no steps"},
		{"prose", "log in as the test user and check the totals", 1, "log in as the test user", "a step starts with"},
		{"bad line among good ones", "Click Sign in\nType alice into Username\nDance wildly", 3, "Dance wildly", "a step starts with"},
		{"fill without with", "1. Open /x\n2. Fill Username alice", 2, "Fill Username alice", "Fill <field> with <value>"},
		{"select without option", `Select "" from Size`, 1, `Select "" from Size`, "needs an option"},
		{"click nothing", "Click", 1, "Click", "click what?"},
		{"go without to", "Go home", 1, "Go home", `"to <url or name>"`},
		{"wait for nothing", "Wait", 1, "Wait", "Wait for <text>"},
		{"wait too long", "Wait 2 hours", 1, "Wait 2 hours", "Wait for <text>"},
		{"wait zero", "Wait 0 seconds", 1, "Wait 0 seconds", "more than 0"},
		{"vague expect", "Expect the login to work", 1, "Expect the login to work", "cannot tell what to expect"},
		{"empty url", "Expect URL", 1, "Expect URL", "something to look for"},
		{"scroll sideways", "Scroll sideways", 1, "Scroll sideways", "Scroll down"},
		{"quoted value without field", `Type "alice" somewhere`, 1, `Type "alice" somewhere`, `"into <field>"`},
		{"second part of a line", "Click Sign in, then dance", 1, "dance", "a step starts with"},
		{"bad part after a good one", "Click Save. Wait", 1, "Wait", "Wait for <text>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.in)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "error %v", err)
			require.Equal(t, tt.line, pe.Line)
			require.Equal(t, tt.text, pe.Text)
			require.Contains(t, pe.Error(), tt.reason)
			if tt.line > 0 {
				require.Contains(t, pe.Error(), "line ")
			}
		})
	}
}
