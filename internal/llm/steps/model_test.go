package steps

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// allTools are the runner's tools as far as the controller cares.
func allTools() []llm.Tool {
	var out []llm.Tool
	for _, n := range []string{toolClick, toolFill, toolSelect, toolCheck, toolPressKey, toolNavigate, toolWait, toolScroll, toolComplete, "get_snapshot"} {
		out = append(out, llm.Tool{Name: n, Description: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return out
}

// convo drives a controller the way the runner does: one Complete per
// turn, each answer's tool call answered with a result.
type convo struct {
	t    *testing.T
	m    llm.Model
	msgs []llm.Message
	last *llm.Response
}

func newConvo(t *testing.T, goal string) *convo {
	t.Helper()
	m, err := New(llm.Settings{Provider: llm.ProviderSteps, Goal: goal})
	require.NoError(t, err)
	return &convo{t: t, m: m, msgs: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: goal}}}}}
}

// turn asks for the next call on obs and checks its shape; it returns the
// tool's name and arguments.
func (c *convo) turn(obs *llm.Observation) (string, map[string]any) {
	c.t.Helper()
	resp, err := c.m.Complete(context.Background(), &llm.Request{System: "ignored", Messages: c.msgs, Tools: allTools(), Observation: obs})
	require.NoError(c.t, err)
	require.Len(c.t, resp.ToolCalls, 1)
	require.Equal(c.t, llm.Usage{}, resp.Usage)
	require.Equal(c.t, "tool_use", resp.StopReason)
	require.NotEmpty(c.t, resp.Text)
	require.NotContains(c.t, resp.Text, "\n")
	tc := resp.ToolCalls[0]
	var args map[string]any
	require.NoError(c.t, json.Unmarshal(tc.Arguments, &args))
	if tc.Name != toolComplete {
		require.Equal(c.t, 1.0, args["confidence"])
		require.NotEmpty(c.t, args["reasoning"])
	}
	c.last = resp
	c.msgs = append(c.msgs, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Text: resp.Text}, {ToolCall: &tc}}})
	return tc.Name, args
}

// answer sends the result of the last call.
func (c *convo) answer(content string, isError bool) {
	tc := c.last.ToolCalls[0]
	c.msgs = append(c.msgs, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		{ToolResult: &llm.ToolResult{CallID: tc.ID, Name: tc.Name, Content: content, IsError: isError}},
		{Text: "fresh snapshot follows"},
	}})
}

func (c *convo) ok() { c.answer(`{"success":true,"message":"done"}`, false) }
func (c *convo) fail(code, message string) {
	c.answer(`{"success":false,"error":"`+code+`","message":"`+message+`"}`, true)
}

var (
	loginPage = &llm.Observation{
		URL: "https://app.test/login", Title: "Sign in – App",
		Text: "Sign in to App Username Password Sign in No account? Sign up",
		Elements: []llm.ObservedElement{
			{Ref: "@e1", Role: "textbox", Name: "Username", State: []string{"focused"}},
			{Ref: "@e2", Role: "textbox", Name: "Password"},
			{Ref: "@e3", Role: "button", Name: "Sign in"},
			{Ref: "@e4", Role: "link", Name: "Sign up"},
		},
	}
	dashboard = &llm.Observation{
		URL: "https://app.test/dashboard?tab=home", Title: "Dashboard – App",
		Text: "Welcome, alice! Reports Settings Sign out",
		Elements: []llm.ObservedElement{
			{Ref: "@e1", Role: "link", Name: "Reports"},
			{Ref: "@e2", Role: "link", Name: "Settings"},
			{Ref: "@e3", Role: "button", Name: "Sign out"},
		},
	}
)

func TestLoginFlow(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "1. Type alice into Username\n2. Type \"s3cret\" into the Password field\n3. Click \"Sign in\"\n4. Expect text Welcome, alice\n5. Expect URL /dashboard")
	require.Equal(t, "steps", c.m.Provider())
	require.Equal(t, "steps-v1", c.m.Name())

	tool, args := c.turn(loginPage)
	require.Equal(t, toolFill, tool)
	require.Equal(t, map[string]any{"ref": "@e1", "value": "alice", "reasoning": "Type alice into Username", "confidence": 1.0}, args)
	require.Equal(t, `Step 1/5: Type alice into Username → @e1 textbox "Username"`, c.last.Text)
	c.ok()

	tool, args = c.turn(loginPage)
	require.Equal(t, toolFill, tool)
	require.Equal(t, "@e2", args["ref"])
	require.Equal(t, "s3cret", args["value"])
	c.ok()

	tool, args = c.turn(loginPage)
	require.Equal(t, toolClick, tool)
	require.Equal(t, "@e3", args["ref"])
	require.Equal(t, `Step 3/5: Click "Sign in" → @e3 button "Sign in"`, c.last.Text)
	first := c.last.ToolCalls[0].ID
	c.ok()

	// Both expectations hold on the dashboard: no browser action, straight
	// to success.
	tool, args = c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
	require.Contains(t, args["reason"], `text "Welcome, alice"`)
	require.Contains(t, args["reason"], `the URL to contain "/dashboard"`)
	require.Contains(t, c.last.Text, "Step 4/5: Expect text Welcome, alice ✓")
	require.Contains(t, c.last.Text, "Step 5/5: Expect URL /dashboard ✓")
	require.NotEqual(t, first, c.last.ToolCalls[0].ID)
}

func TestRetryPrefersNextBest(t *testing.T) {
	t.Parallel()
	page := &llm.Observation{URL: "https://app.test/doc", Text: "Editor", Elements: []llm.ObservedElement{
		{Ref: "@e1", Role: "button", Name: "Save"},
		{Ref: "@e2", Role: "button", Name: "Save draft"},
		{Ref: "@e3", Role: "button", Name: "Delete"},
	}}
	c := newConvo(t, "Click Save\nExpect text Saved")
	tool, args := c.turn(page)
	require.Equal(t, toolClick, tool)
	require.Equal(t, "@e1", args["ref"])
	c.fail("element_obscured", "covered by the cookie banner")

	tool, args = c.turn(page)
	require.Equal(t, toolClick, tool)
	require.Equal(t, "@e2", args["ref"], "a retry prefers the next-best element")
	require.Contains(t, c.last.Text, "attempt 2/3")
	c.ok()

	saved := *page
	saved.Text = "Editor — Saved"
	tool, args = c.turn(&saved)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
}

func TestRetryWithPlainErrorResult(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Press Enter\nPress Tab")
	tool, args := c.turn(loginPage)
	require.Equal(t, toolPressKey, tool)
	require.Equal(t, "Enter", args["keys"])
	c.answer("browser gone", true) // not JSON, IsError set

	tool, args = c.turn(loginPage)
	require.Equal(t, toolPressKey, tool)
	require.Equal(t, "Enter", args["keys"], "the same step again")
	c.ok()

	_, args = c.turn(loginPage)
	require.Equal(t, "Tab", args["keys"])
}

func TestFailsAfterThreeTries(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Click Save\nClick Close")
	page := &llm.Observation{URL: "https://app.test/", Elements: []llm.ObservedElement{{Ref: "@e7", Role: "button", Name: "Save"}}}
	for i := range 3 {
		tool, args := c.turn(page)
		require.Equal(t, toolClick, tool, "try %d", i+1)
		require.Equal(t, "@e7", args["ref"])
		c.fail("element_obscured", "covered by a dialog")
	}
	tool, args := c.turn(page)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"])
	require.Equal(t, "Step 1 (Click Save) failed after 3 attempts: element_obscured: covered by a dialog", args["reason"])
}

func TestDomainBlockedFailsAtOnce(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Open https://evil.test/")
	tool, _ := c.turn(loginPage)
	require.Equal(t, toolNavigate, tool)
	c.fail("domain_blocked", "evil.test is not allowed")
	tool, args := c.turn(loginPage)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"])
	require.Contains(t, args["reason"], "domain_blocked: evil.test is not allowed")
}

func TestExpectFailsAfterWait(t *testing.T) {
	t.Parallel()
	cart := &llm.Observation{URL: "https://shop.test/cart", Title: "Cart", Text: "Your cart: 1 item. Checkout",
		Elements: []llm.ObservedElement{{Ref: "@e1", Role: "button", Name: "Checkout"}}}
	c := newConvo(t, "Expect text Order placed")
	tool, args := c.turn(cart)
	require.Equal(t, toolWait, tool)
	require.Equal(t, "Order placed", args["text"])
	require.Equal(t, 10000.0, args["timeout_ms"])
	c.fail("timeout", "text did not appear within 10s")

	tool, args = c.turn(cart)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"])
	require.Equal(t, `Step 1 (Expect text Order placed) failed: expected text "Order placed", saw page text "Your cart: 1 item. Checkout"`, args["reason"])
}

func TestExpectURLAndTitleWaitThenPass(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Expect URL */dashboard\nExpect title Dashboard")
	tool, args := c.turn(loginPage)
	require.Equal(t, toolWait, tool)
	require.Equal(t, 2.0, args["seconds"])
	c.ok()

	// The URL arrived meanwhile; the title is there too.
	tool, args = c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
	require.Contains(t, args["reason"], `the URL to match "*/dashboard"`)
	require.Contains(t, args["reason"], `the title to contain "Dashboard"`)
}

func TestExpectTitleFails(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Expect title Reports")
	tool, _ := c.turn(dashboard)
	require.Equal(t, toolWait, tool)
	c.ok()
	_, args := c.turn(dashboard)
	require.Equal(t, "failed", args["status"])
	require.Contains(t, args["reason"], `expected the title to contain "Reports", saw "Dashboard – App"`)
}

func TestNotAcknowledged(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Click Reports")
	tool, _ := c.turn(dashboard)
	require.Equal(t, toolClick, tool)
	c.ok()
	tool, args := c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
	c.answer(`{"acknowledged":false,"message":"the judge saw no report"}`, false)

	tool, args = c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"])
	require.Equal(t, "The run did not accept success: the judge saw no report", args["reason"])

	// A refused failure does not loop.
	c.answer(`{"acknowledged":false,"message":"still no"}`, false)
	_, err := c.m.Complete(context.Background(), &llm.Request{Messages: c.msgs, Tools: allTools(), Observation: dashboard})
	require.ErrorIs(t, err, llm.ErrRefused)
	require.ErrorContains(t, err, "still no")
}

// A success claim refused because the browser crashed as it was made is
// made once more on the reopened page; refused again, the run gives up.
func TestClaimAgainAfterACrash(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Expect text Welcome")
	tool, args := c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
	c.answer(`{"acknowledged":false,"message":"Not confirmed: the last step ended with an error: browser_crash: the browser crashed: gone"}`, true)
	tool, args = c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"], "claimed again on the reopened page")
	c.answer(`{"acknowledged":false,"message":"Not confirmed: the last step ended with an error: browser_crash: again"}`, true)
	tool, args = c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"], "once only")
}

func TestAcknowledgedRepeats(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Expect text Welcome")
	tool, _ := c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	c.answer(`{"acknowledged":true}`, false)
	tool, args := c.turn(dashboard)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
}

func TestRelativeNavigation(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Go to /reports?week=12\nExpect title Reports\nOpen ../settings")
	tool, args := c.turn(dashboard)
	require.Equal(t, toolNavigate, tool)
	require.Equal(t, "https://app.test/reports?week=12", args["url"])
	require.Contains(t, c.last.Text, "→ https://app.test/reports?week=12")
	c.ok()

	reports := &llm.Observation{URL: "https://app.test/reports/weekly", Title: "Weekly Reports"}
	tool, args = c.turn(reports)
	require.Equal(t, toolNavigate, tool)
	require.Equal(t, "https://app.test/settings", args["url"])
	c.ok()

	tool, _ = c.turn(reports)
	require.Equal(t, toolComplete, tool)
}

func TestNoElementMatches(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Click Sign in\nClick Checkout")
	tool, _ := c.turn(loginPage)
	require.Equal(t, toolClick, tool)
	c.ok()
	tool, args := c.turn(loginPage)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "failed", args["status"])
	require.Contains(t, args["reason"], "Step 2 (Click Checkout) failed: no element matches 'Checkout' (closest: ")
}

func TestOtherActions(t *testing.T) {
	t.Parallel()
	form := &llm.Observation{URL: "https://app.test/settings", Text: "Settings saved", Elements: []llm.ObservedElement{
		{Ref: "@e1", Role: "combobox", Name: "Country", Options: []string{"Germany", "United States", "+40"}},
		{Ref: "@e2", Role: "checkbox", Name: "Newsletter", State: []string{"checked"}},
		{Ref: "@e3", Role: "checkbox", Name: "Remember me"},
		{Ref: "@e4", Role: "searchbox", Name: "Search", State: []string{"focused"}},
		{Ref: "@e5", Role: "link", Name: "Footer"},
	}}
	c := newConvo(t, "Select united states from Country\nUncheck Newsletter\nCheck Remember me\n"+
		"Type shoes\nPress Control+A\nScroll down\nScroll to Footer\nWait for Settings saved\nWait 45 seconds")
	want := []struct {
		tool string
		args map[string]any
	}{
		{toolSelect, map[string]any{"ref": "@e1", "value": "United States"}},
		{toolCheck, map[string]any{"ref": "@e2", "checked": false}},
		{toolCheck, map[string]any{"ref": "@e3", "checked": true}},
		{toolFill, map[string]any{"ref": "@e4", "value": "shoes"}},
		{toolPressKey, map[string]any{"keys": "Control+A"}},
		{toolScroll, map[string]any{"direction": "down"}},
		{toolScroll, map[string]any{"ref": "@e5"}},
		// "Settings saved" is already shown: that wait is passed over.
		{toolWait, map[string]any{"seconds": 30.0}},
		{toolWait, map[string]any{"seconds": 15.0}},
	}
	for i, w := range want {
		tool, args := c.turn(form)
		require.Equal(t, w.tool, tool, "call %d", i)
		delete(args, "reasoning")
		delete(args, "confidence")
		require.Equal(t, w.args, args, "call %d", i)
		c.ok()
	}
	tool, _ := c.turn(form)
	require.Equal(t, toolComplete, tool)
}

func TestWaitForTextRetries(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Wait for Done")
	tool, args := c.turn(loginPage)
	require.Equal(t, toolWait, tool)
	require.Equal(t, "Done", args["text"])
	c.fail("timeout", "no")
	tool, _ = c.turn(loginPage)
	require.Equal(t, toolWait, tool)
	c.ok()
	tool, args = c.turn(loginPage)
	require.Equal(t, toolComplete, tool)
	require.Equal(t, "success", args["status"])
}

func TestAskedAgainWithoutResult(t *testing.T) {
	t.Parallel()
	c := newConvo(t, "Click Sign in")
	c.turn(loginPage)
	id := c.last.ToolCalls[0].ID
	// The runner asks again without answering the call: the same call.
	resp, err := c.m.Complete(context.Background(), &llm.Request{Messages: c.msgs, Tools: allTools(), Observation: loginPage})
	require.NoError(t, err)
	require.Equal(t, id, resp.ToolCalls[0].ID)
	require.Equal(t, toolClick, resp.ToolCalls[0].Name)
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	m, err := New(llm.Settings{Goal: "Click Save\nExpect text Saved"})
	require.NoError(t, err)

	var noWait []llm.Tool
	for _, tl := range allTools() {
		if tl.Name != toolWait {
			noWait = append(noWait, tl)
		}
	}
	_, err = m.Complete(context.Background(), &llm.Request{Tools: noWait, Observation: loginPage})
	require.ErrorIs(t, err, llm.ErrInvalidRequest)
	require.ErrorContains(t, err, "browser_wait")
	require.ErrorContains(t, err, "step 2")

	_, err = m.Complete(context.Background(), &llm.Request{Tools: allTools()})
	require.ErrorIs(t, err, llm.ErrInvalidRequest)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Complete(ctx, &llm.Request{Tools: allTools(), Observation: loginPage})
	require.Equal(t, context.Canceled, err)
}

func TestNewRejectsBadGoal(t *testing.T) {
	t.Parallel()
	_, err := New(llm.Settings{Goal: "Click Save\nlog in and look around"})
	require.ErrorIs(t, err, llm.ErrInvalidRequest)
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, 2, pe.Line)
	require.ErrorContains(t, err, "line 2")
}
