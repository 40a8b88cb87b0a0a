package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// Names of the engine's own tools. The first seven are those of seed 002
// §1.1, with exactly those names; the rest are the other browser actions.
const (
	ToolGetSnapshot    = "get_snapshot"
	ToolClick          = "browser_click"
	ToolFill           = "browser_fill"
	ToolSelect         = "browser_select"
	ToolScroll         = "browser_scroll"
	ToolApproval       = "request_human_approval"
	ToolComplete       = "complete_task"
	ToolNavigate       = "browser_navigate"
	ToolBack           = "browser_back"
	ToolPressKey       = "browser_press_key"
	ToolHover          = "browser_hover"
	ToolCheck          = "browser_check"
	ToolType           = "browser_type"
	ToolWait           = "browser_wait"
	ToolClickAt        = "browser_click_at"
	ToolTabs           = "browser_tabs"
	ToolExtract        = "browser_extract"
	refPattern         = `^@e\\d+$`
	confidenceArgument = "confidence"
)

// Shared schema fragments: every browser tool takes reasoning and
// confidence (seed 003 §2.2), and element tools take a ref or a target.
const (
	reasoningProp  = `"reasoning":{"type":"string","description":"Why this action, in one sentence."}`
	confidenceProp = `"confidence":{"type":"number","minimum":0,"maximum":1,"description":"How sure you are that this is the right action (0-1). Below the run's threshold the action is not executed."}`
	refProp        = `"ref":{"type":"string","pattern":"` + refPattern + `","description":"Element ref from the latest snapshot, e.g. @e7."}`
	targetProp     = `"target":{"type":"object","description":"Use instead of ref when no ref fits: tried as css, then role+name, then text.","properties":{"css":{"type":"string"},"role":{"type":"string"},"name":{"type":"string"},"text":{"type":"string"}}}`
	common         = reasoningProp + `,` + confidenceProp
	element        = refProp + `,` + targetProp + `,` + common
)

const refNote = " After any action all refs become invalid; the result carries a fresh snapshot with new refs."

const errorsNote = " Errors: ref_invalid, element_disabled, element_obscured, element_not_visible, action_failed, timeout, invalid_params."

// engineTools are the engine's tool definitions, in the order offered.
var engineTools = []llm.Tool{
	{Name: ToolGetSnapshot, Description: "Capture the current page: its interactive elements with refs, and a screenshot. Use it when you need a fresh look (after waiting, to page through a long list with offset, or to filter). Example: {\"filter\":\"checkout\"}.",
		InputSchema: schema(`"viewport_only":{"type":"boolean","description":"Only elements in the viewport. Default false."},"filter":{"type":"string","description":"Only elements whose role, name or context contain these words."},"offset":{"type":"integer","minimum":0,"description":"Skip this many elements (paging)."}`)},
	{Name: ToolClick, Description: "Click an element by its ref from the most recent snapshot (or a target when no ref fits)." + refNote + " Use for buttons, links, tabs, menu items. Example: {\"ref\":\"@e7\",\"reasoning\":\"open the login form\",\"confidence\":0.9}." + errorsNote,
		InputSchema: schema(element + `,"double":{"type":"boolean","description":"Double-click."}`)},
	{Name: ToolFill, Description: "Fill a text field (role textbox, searchbox, combobox) with a value, replacing its content." + refNote + " Example: {\"ref\":\"@e3\",\"value\":\"alice\"}." + errorsNote,
		InputSchema: schema(element+`,"value":{"type":"string","description":"Text to enter."},"clear_first":{"type":"boolean","description":"Clear existing content first. Default true."}`, "value")},
	{Name: ToolSelect, Description: "Select an option of a dropdown (select, combobox or listbox) by value or visible text." + refNote + " Example: {\"ref\":\"@e5\",\"value\":\"Blue\"}." + errorsNote,
		InputSchema: schema(element+`,"value":{"type":"string","description":"Option value or visible text."}`, "value")},
	{Name: ToolScroll, Description: "Scroll an element into view (ref) or the page (direction: up, down, top, bottom; amount in pixels, default 300). Give ref or direction; neither is invalid_params." + refNote,
		InputSchema: schema(element + `,"direction":{"type":"string","enum":["up","down","left","right","top","bottom"]},"amount":{"type":"integer","minimum":1}`)},
	{Name: ToolApproval, Description: "Ask a human to approve an action before you take it (payments, deletions, anything irreversible). The run pauses until they answer {approved, message}; a rejection's message tells you what to do instead.",
		InputSchema: schema(`"action":{"type":"string","description":"What you want to do."},"reason":{"type":"string","description":"Why it needs approval."}`, "action", "reason")},
	{Name: ToolComplete, Description: "Signal that the task is finished: status success when the goal is achieved (the judge verifies it; if it is not confirmed you get acknowledged:false with the reason and must continue), failed when it cannot be achieved. You MUST call this to end the task.",
		InputSchema: schema(`"status":{"type":"string","enum":["success","failed"]},"reason":{"type":"string","description":"What you observed that shows the outcome."},"data":{"description":"Optional: the structured answer the goal asks for, e.g. extracted values (any JSON value, at most 256 KiB)."}`, "status", "reason")},
	{Name: ToolNavigate, Description: "Open a URL in the current tab (only allowed domains)." + refNote + " Example: {\"url\":\"https://example.com/reports\"}. Errors: domain_blocked, timeout, action_failed.",
		InputSchema: schema(`"url":{"type":"string","description":"Absolute URL."},`+common, "url")},
	{Name: ToolBack, Description: "Go back in the tab's history." + refNote,
		InputSchema: schema(common)},
	{Name: ToolPressKey, Description: "Press a key or chord (Enter, Tab, Escape, ArrowDown, Control+A; several separated by spaces), on an element when given." + refNote + " Example: {\"keys\":\"Enter\"}.",
		InputSchema: schema(element+`,"keys":{"type":"string"}`, "keys")},
	{Name: ToolHover, Description: "Move the mouse over an element (menus that open on hover, tooltips)." + refNote,
		InputSchema: schema(element)},
	{Name: ToolCheck, Description: "Check (checked true, the default) or uncheck a checkbox, radio button or switch." + refNote,
		InputSchema: schema(element + `,"checked":{"type":"boolean"}`)},
	{Name: ToolType, Description: "Type text key by key into an element (or the focused one), keeping its content; for fields that react to each key. Prefer browser_fill for plain fields." + refNote,
		InputSchema: schema(element+`,"text":{"type":"string"}`, "text")},
	{Name: ToolWait, Description: "Wait for text to appear, for an element (ref) to become visible, or for a number of seconds (at most 30)." + refNote + " Example: {\"text\":\"Saved\"}.",
		InputSchema: schema(refProp + `,"text":{"type":"string"},"seconds":{"type":"number","minimum":0,"maximum":30},"timeout_ms":{"type":"integer","minimum":0},` + common)},
	{Name: ToolClickAt, Description: "Click at viewport coordinates (CSS pixels), the last resort when no element is listed for what you see in the screenshot." + refNote,
		InputSchema: schema(`"x":{"type":"number","minimum":0},"y":{"type":"number","minimum":0},`+common, "x", "y")},
	{Name: ToolTabs, Description: "List the open tabs, switch to one, or close one (tab IDs are in the snapshot header)." + refNote,
		InputSchema: schema(`"action":{"type":"string","enum":["list","switch","close"]},"tab":{"type":"string"},`+common, "action")},
	{Name: ToolExtract, Description: "Read rows of data: rows is a CSS selector for each item, fields maps output keys to a CSS selector inside the row (text), \"css@attr\" (attribute) or \"\" (the row's text). Example: {\"rows\":\"table tr\",\"fields\":{\"name\":\"td:nth-child(1)\"}}.",
		InputSchema: schema(`"rows":{"type":"string"},"fields":{"type":"object","additionalProperties":{"type":"string"}},"limit":{"type":"integer","minimum":1,"maximum":1000},`+common, "rows", "fields")},
}

// MaxOutputSize is the largest output a run keeps, in bytes of compact
// JSON: larger complete_task data is answered invalid_params, and an
// extract's rows are cut to the leading rows that fit.
const MaxOutputSize = 256 << 10

// claimData decodes complete_task's data argument: nil when absent or
// null, an error when it is over MaxOutputSize.
func claimData(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("data is not valid JSON: %w", err)
	}
	if b.Len() > MaxOutputSize {
		return nil, fmt.Errorf("data is %d bytes as JSON, over the limit of %d (256 KiB): send only the values the goal asks for", b.Len(), MaxOutputSize)
	}
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("data is not valid JSON: %w", err)
	}
	return v, nil
}

// outputRows is an extract's rows as a run's output: the leading rows
// that fit in MaxOutputSize as a JSON array.
func outputRows(rows []map[string]string) []any {
	out := make([]any, 0, len(rows))
	size := 1 // "[", then each row with its "," or "]"
	for _, row := range rows {
		b, err := json.Marshal(row)
		if err != nil {
			break
		}
		if size += len(b) + 1; size > MaxOutputSize {
			break
		}
		m := make(map[string]any, len(row))
		for k, v := range row {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// schema builds an object schema from property JSON and required names.
func schema(props string, required ...string) json.RawMessage {
	req := ""
	if len(required) > 0 {
		req = `,"required":["` + strings.Join(required, `","`) + `"]`
	}
	s := `{"type":"object","properties":{` + props + `}` + req + `}`
	if !json.Valid([]byte(s)) {
		panic(fmt.Sprintf("runner: invalid tool schema %s", s))
	}
	return json.RawMessage(s)
}

// EngineTools returns the definitions of the engine's own tools (for
// documentation and the benchmark's token count).
func EngineTools() []llm.Tool {
	return append([]llm.Tool(nil), engineTools...)
}

// Reserved reports whether name is one of the engine's tools, which custom
// tools may not shadow.
func Reserved(name string) bool {
	for _, t := range engineTools {
		if t.Name == name {
			return true
		}
	}
	return false
}
