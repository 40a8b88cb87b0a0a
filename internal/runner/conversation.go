package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	_ "image/jpeg" // screenshot sizes for token estimates
	_ "image/png"
	"strings"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// Untrusted-data delimiters around page content (names, text, HTML) in
// prompts, shared with the judge. The system prompt tells the model that
// what is inside is data.
const (
	untrustedOpen  = llm.UntrustedOpen
	untrustedClose = llm.UntrustedClose
)

var delimiterLike = llm.UntrustedMarker()

// untrusted wraps page content in the delimiters, defusing any delimiter
// the page itself contains so it cannot close the block early.
func untrusted(s string) string {
	return untrustedOpen + "\n" + delimiterLike.ReplaceAllString(s, "[delimiter removed]") + "\n" + untrustedClose
}

// turn is one controller answer and the user message that answered it.
type turn struct {
	assistant llm.Message
	// results answers the assistant's tool calls (and carries notes and
	// the screenshot after the turn).
	results llm.Message
	// lean is results without page snapshots, used once the turn is no
	// longer among the latest.
	lean llm.Message
	// summary lines for the action summary of seed 002 §2.1.3.
	summary []string
}

// conversation is the controller's history: the opening message (goal and
// first page) and the turns since, shaped into a request within budgets.
type conversation struct {
	opening llm.Message
	turns   []turn
	// depth is how many screenshots the model sees.
	depth int
	// historyBudget and historyTurns: past historyBudget estimated tokens
	// only the last historyTurns turns are kept, the others summarised.
	historyBudget, historyTurns int
	// turnBudget bounds the estimated input tokens of one request.
	turnBudget int
	// fullSnapshots is how many recent turns keep their page snapshots.
	fullSnapshots int
}

// request builds the controller request: the system prompt, the opening
// message (with the summary of dropped turns), and the kept turns, with
// images only in the most recent depth messages that have them.
func (c *conversation) request(system string, tools []llm.Tool) *llm.Request {
	keep := len(c.turns)
	if c.estimate(system, tools, keep, c.depth) > c.historyBudget && keep > c.historyTurns {
		keep = c.historyTurns
	}
	depth := c.depth
	for keep > 1 && c.estimate(system, tools, keep, depth) > c.turnBudget {
		keep--
	}
	for depth > 1 && c.estimate(system, tools, keep, depth) > c.turnBudget {
		depth--
	}
	return &llm.Request{System: system, Tools: tools, Messages: c.messages(keep, depth)}
}

func (c *conversation) messages(keep, depth int) []llm.Message {
	dropped := c.turns[:len(c.turns)-keep]
	opening := c.opening
	if len(dropped) > 0 {
		var b strings.Builder
		b.WriteString("Previous actions:\n")
		for _, t := range dropped {
			for _, s := range t.summary {
				b.WriteString("- ")
				b.WriteString(s)
				b.WriteByte('\n')
			}
		}
		// The opening's first part is the goal; the summary follows it and
		// the first page (stale by now) is left out.
		opening = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{opening.Parts[0], {Text: b.String()}}}
	}
	msgs := []llm.Message{opening}
	for i, t := range c.turns[len(c.turns)-keep:] {
		res := t.results
		if keep-i > c.fullSnapshots {
			res = t.lean
		}
		msgs = append(msgs, t.assistant, res)
	}
	return keepImages(msgs, depth)
}

// keepImages drops the images of all but the last depth messages that
// have any, so the model sees a ring buffer of recent screenshots.
func keepImages(msgs []llm.Message, depth int) []llm.Message {
	out := make([]llm.Message, len(msgs))
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if !hasImages(m) {
			out[i] = m
			continue
		}
		if seen < depth {
			seen++
			out[i] = m
			continue
		}
		out[i] = withoutImages(m)
	}
	return out
}

func hasImages(m llm.Message) bool {
	for _, p := range m.Parts {
		if p.Image != nil || (p.ToolResult != nil && len(p.ToolResult.Images) > 0) {
			return true
		}
	}
	return false
}

func withoutImages(m llm.Message) llm.Message {
	parts := make([]llm.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		switch {
		case p.Image != nil:
			continue
		case p.ToolResult != nil && len(p.ToolResult.Images) > 0:
			tr := *p.ToolResult
			tr.Images = nil
			p = llm.Part{ToolResult: &tr}
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = append(parts, llm.Part{Text: "(screenshot omitted)"})
	}
	return llm.Message{Role: m.Role, Parts: parts}
}

// estimate is the approximate input tokens of a request keeping the last
// keep turns and depth screenshots: text at four characters per token,
// images at width×height/750 (the Anthropic rule; others are close).
func (c *conversation) estimate(system string, tools []llm.Tool, keep, depth int) int {
	n := len(system) / 4
	for _, t := range tools {
		n += (len(t.Name) + len(t.Description) + len(t.InputSchema)) / 4
	}
	for _, m := range c.messages(keep, depth) {
		n += messageTokens(m)
	}
	return n
}

func messageTokens(m llm.Message) int {
	n := 4
	for _, p := range m.Parts {
		n += len(p.Text) / 4
		if p.Image != nil {
			n += imageTokens(p.Image)
		}
		if p.ToolCall != nil {
			n += (len(p.ToolCall.Name) + len(p.ToolCall.Arguments)) / 4
		}
		if p.ToolResult != nil {
			n += len(p.ToolResult.Content) / 4
			for i := range p.ToolResult.Images {
				n += imageTokens(&p.ToolResult.Images[i])
			}
		}
	}
	return n
}

func imageTokens(img *llm.Image) int {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		return 1500
	}
	return cfg.Width * cfg.Height / 750
}

// newImage wraps a screenshot for a message, named by its content hash.
func newImage(data []byte, mediaType string) llm.Image {
	sum := sha256.Sum256(data)
	return llm.Image{MediaType: mediaType, Data: data, Ref: "sha256:" + hex.EncodeToString(sum[:])}
}

// summarize renders one executed call for the action summary, e.g.
// `browser_fill(@e8, "test"): success`.
func summarize(tool string, a toolArgs, outcome string) string {
	var args []string
	if a.Ref != "" {
		args = append(args, a.Ref)
	}
	if a.Target != nil {
		args = append(args, fmt.Sprintf("%+v", *a.Target))
	}
	for _, s := range []string{a.URL, a.Keys, a.Text, a.Direction, a.Status} {
		if s != "" {
			args = append(args, fmt.Sprintf("%q", truncate(s, 60)))
		}
	}
	if a.Value != nil {
		args = append(args, fmt.Sprintf("%q", truncate(*a.Value, 60)))
	}
	result := "success"
	if outcome != "ok" && outcome != "" {
		result = "failed (" + outcome + ")"
	}
	return fmt.Sprintf("%s(%s): %s", tool, strings.Join(args, ", "), result)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
