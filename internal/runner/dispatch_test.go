package runner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestBrowserAction(t *testing.T) {
	t.Parallel()
	target := &browser.Target{Role: "button", Name: "Save"}
	for _, tc := range []struct {
		name string
		tool string
		args string
		want browser.Action
		ok   bool
		err  string
	}{
		{"click by ref", ToolClick, `{"ref":"@e3","confidence":0.9}`, browser.Action{Kind: browser.ActionClick, Ref: "@e3"}, true, ""},
		{"double click", ToolClick, `{"ref":"@e3","double":true}`, browser.Action{Kind: browser.ActionDoubleClick, Ref: "@e3"}, true, ""},
		{"a ref wins over a target", ToolClick, `{"ref":"@e3","target":{"role":"button","name":"Save"}}`, browser.Action{Kind: browser.ActionClick, Ref: "@e3"}, true, ""},
		{"click by target", ToolClick, `{"target":{"role":"button","name":"Save"}}`, browser.Action{Kind: browser.ActionClick, Target: target}, true, ""},
		{"fill", ToolFill, `{"ref":"@e1","value":"alice"}`, browser.Action{Kind: browser.ActionFill, Ref: "@e1", Value: "alice"}, true, ""},
		{"fill with an empty value", ToolFill, `{"ref":"@e1","value":""}`, browser.Action{Kind: browser.ActionFill, Ref: "@e1"}, true, ""},
		{"fill keeping the content types", ToolFill, `{"ref":"@e1","value":"x","clear_first":false}`, browser.Action{Kind: browser.ActionType, Ref: "@e1", Value: "x"}, true, ""},
		{"fill without a value", ToolFill, `{"ref":"@e1"}`, browser.Action{}, true, "value is required"},
		{"select", ToolSelect, `{"ref":"@e5","value":"Blue"}`, browser.Action{Kind: browser.ActionSelect, Ref: "@e5", Value: "Blue"}, true, ""},
		{"select without a value", ToolSelect, `{"ref":"@e5"}`, browser.Action{}, true, "value is required"},
		{"scroll the page", ToolScroll, `{"direction":"down","amount":500}`, browser.Action{Kind: browser.ActionScroll, Direction: "down", Amount: 500}, true, ""},
		{"scroll to an element", ToolScroll, `{"ref":"@e9","direction":"down","amount":500}`, browser.Action{Kind: browser.ActionScroll, Ref: "@e9"}, true, ""},
		{"scroll without ref or direction", ToolScroll, `{}`, browser.Action{}, true, "give ref or direction"},
		{"navigate", ToolNavigate, `{"url":"https://example.com/","ref":"@e1"}`, browser.Action{Kind: browser.ActionNavigate, URL: "https://example.com/"}, true, ""},
		{"back", ToolBack, `{"ref":"@e1"}`, browser.Action{Kind: browser.ActionBack}, true, ""},
		{"press", ToolPressKey, `{"keys":"Enter","ref":"@e2"}`, browser.Action{Kind: browser.ActionPress, Keys: "Enter", Ref: "@e2"}, true, ""},
		{"hover", ToolHover, `{"ref":"@e2"}`, browser.Action{Kind: browser.ActionHover, Ref: "@e2"}, true, ""},
		{"check", ToolCheck, `{"ref":"@e2"}`, browser.Action{Kind: browser.ActionCheck, Ref: "@e2"}, true, ""},
		{"uncheck", ToolCheck, `{"ref":"@e2","checked":false}`, browser.Action{Kind: browser.ActionUncheck, Ref: "@e2"}, true, ""},
		{"type", ToolType, `{"ref":"@e2","text":"abc"}`, browser.Action{Kind: browser.ActionType, Ref: "@e2", Value: "abc"}, true, ""},
		{"wait for text", ToolWait, `{"text":"Saved","ref":"@e2","timeout_ms":2000}`, browser.Action{Kind: browser.ActionWait, Text: "Saved", Timeout: 2 * time.Second}, true, ""},
		{"wait for an element", ToolWait, `{"ref":"@e2","target":{"css":"#x"}}`, browser.Action{Kind: browser.ActionWait, Ref: "@e2"}, true, ""},
		{"wait a while", ToolWait, `{"seconds":2}`, browser.Action{Kind: browser.ActionWait, Duration: 2 * time.Second}, true, ""},
		{"wait past the action timeout", ToolWait, `{"seconds":20}`, browser.Action{Kind: browser.ActionWait, Duration: 20 * time.Second, Timeout: 21 * time.Second}, true, ""},
		{"wait too long", ToolWait, `{"seconds":31}`, browser.Action{}, true, "waits are limited to 30s"},
		{"wait with too long a timeout", ToolWait, `{"text":"x","timeout_ms":60000}`, browser.Action{}, true, "waits are limited to 30s"},
		{"wait for nothing", ToolWait, `{}`, browser.Action{}, true, "give text, ref or seconds"},
		{"click at", ToolClickAt, `{"x":10,"y":20.5}`, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Point: &browser.Point{X: 10, Y: 20.5}}}, true, ""},
		{"click at the origin", ToolClickAt, `{"x":0,"y":0}`, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Point: &browser.Point{}}}, true, ""},
		{"click at without y", ToolClickAt, `{"x":10}`, browser.Action{}, true, "x and y are required"},
		{"switch tab", ToolTabs, `{"action":"switch","tab":"t2"}`, browser.Action{Kind: browser.ActionSwitchTab, Tab: "t2"}, true, ""},
		{"close tab", ToolTabs, `{"action":"close","tab":"t2"}`, browser.Action{Kind: browser.ActionCloseTab, Tab: "t2"}, true, ""},
		{"list tabs", ToolTabs, `{"action":"list"}`, browser.Action{}, false, ""},
		{"a bad tab action", ToolTabs, `{"action":"open"}`, browser.Action{}, true, "action must be list, switch or close"},
		{"extract", ToolExtract, `{"rows":"tr","fields":{"name":"td"},"limit":5}`,
			browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: "tr", Fields: map[string]string{"name": "td"}, Limit: 5}}, true, ""},
		{"not a browser action", ToolComplete, `{"status":"success"}`, browser.Action{}, false, ""},
		{"unknown", "browser_teleport", `{}`, browser.Action{}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _, err := parseArgs(json.RawMessage(tc.args))
			require.NoError(t, err)
			act, ok, err := browserAction(tc.tool, a, 15*time.Second)
			require.Equal(t, tc.ok, ok)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if ok {
				require.Equal(t, tc.want, act)
			}
			require.Equal(t, ok || tc.tool == ToolTabs, isBrowserTool(tc.tool), "isBrowserTool agrees")
		})
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		raw  string
		args map[string]any
		err  string
	}{
		{"empty", ``, map[string]any{}, ""},
		{"null", `null`, map[string]any{}, ""},
		{"object", `{"ref":"@e1","confidence":0.5}`, map[string]any{"ref": "@e1", "confidence": 0.5}, ""},
		{"not JSON", `{"ref":`, nil, "arguments are not a JSON object"},
		{"not an object", `["@e1"]`, nil, "arguments are not a JSON object"},
		{"wrong types", `{"ref":5}`, map[string]any{"ref": float64(5)}, "arguments do not match the tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, args, err := parseArgs(json.RawMessage(tc.raw))
			require.Equal(t, tc.args, args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if c, ok := tc.args["confidence"]; ok {
				require.Equal(t, c, *a.Confidence)
			}
		})
	}
}

func TestEngineTools(t *testing.T) {
	t.Parallel()
	tools := EngineTools()
	tools[0].Name = "changed"
	require.Equal(t, ToolGetSnapshot, EngineTools()[0].Name, "callers get a copy")
	for _, tool := range EngineTools() {
		require.True(t, Reserved(tool.Name), tool.Name)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		require.Equal(t, "object", schema.Type)
		for _, r := range schema.Required {
			require.Contains(t, schema.Properties, r, "%s requires a property it has", tool.Name)
		}
		if isBrowserTool(tool.Name) {
			require.Contains(t, schema.Properties, confidenceArgument, "%s takes a confidence", tool.Name)
			require.Contains(t, schema.Properties, "reasoning", tool.Name)
		}
	}
	require.False(t, Reserved("lookup_order"))
}

func TestElementError(t *testing.T) {
	t.Parallel()
	for code, want := range map[browser.ErrorCode]bool{
		browser.CodeRefInvalid: true, browser.CodeElementDisabled: true, browser.CodeElementObscured: true,
		browser.CodeElementNotVisible: true, browser.CodeActionFailed: true,
		browser.CodeTimeout: false, browser.CodeInvalidParams: false, browser.CodeDomainBlocked: false,
	} {
		require.Equal(t, want, elementError(code), code)
	}
}
