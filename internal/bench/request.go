package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // screenshot sizes
	_ "image/png"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// The delimiters the runner puts around page content in a controller
// request (runner.untrusted); what lies between them, delimiters
// included, is a page snapshot.
const (
	snapshotOpen  = "<untrusted_page_content>"
	snapshotClose = "</untrusted_page_content>"
)

// LLMToolDefinitions renders tools as ToolDefinitions renders an MCP
// server's (a JSON array of name, description and input schema), so both
// sides' definitions are counted alike.
func LLMToolDefinitions(tools []llm.Tool) (string, error) {
	mt := make([]*mcp.Tool, len(tools))
	for i, t := range tools {
		mt[i] = &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return ToolDefinitions(mt)
}

// requestTokens are the input tokens of one controller request by part.
type requestTokens struct {
	TokenSums
	screenshots int
}

func (t requestTokens) text() int  { return t.System + t.Tools + t.Snapshot + t.History }
func (t requestTokens) total() int { return t.TokenSums.total() }

// countRequest counts req's input tokens: text with tok (tool calls as
// name and arguments, tool results as their content: what a model API
// carries, without its per-message framing), images at width×height/750.
// The page snapshot is the one in the newest message (the page the model
// acts on); everything else in the messages is history.
func countRequest(req *llm.Request, tok *Tokenizer) (requestTokens, error) {
	var t requestTokens
	t.System = tok.Count(req.System)
	defs, err := LLMToolDefinitions(req.Tools)
	if err != nil {
		return t, err
	}
	if len(req.Tools) > 0 {
		t.Tools = tok.Count(defs)
	}
	if len(req.Messages) == 0 {
		return t, errors.New("no messages")
	}
	last := len(req.Messages) - 1
	for i, m := range req.Messages {
		for _, p := range m.Parts {
			var texts []string
			switch {
			case p.Text != "":
				texts = append(texts, p.Text)
			case p.ToolCall != nil:
				texts = append(texts, p.ToolCall.Name, string(p.ToolCall.Arguments))
			case p.ToolResult != nil:
				texts = append(texts, p.ToolResult.Content)
				for j := range p.ToolResult.Images {
					n, err := imageTokens(p.ToolResult.Images[j].Data)
					if err != nil {
						return t, err
					}
					t.Images += n
					t.screenshots++
				}
			}
			if p.Image != nil {
				n, err := imageTokens(p.Image.Data)
				if err != nil {
					return t, err
				}
				t.Images += n
				t.screenshots++
			}
			for _, s := range texts {
				n := tok.Count(s)
				if i == last {
					snap := 0
					for _, span := range snapshotSpans(s) {
						snap += tok.Count(span)
					}
					t.Snapshot += snap
					n -= snap
				}
				t.History += n
			}
		}
	}
	if t.Snapshot == 0 {
		return t, fmt.Errorf("no page snapshot (%s…%s) in the newest message", snapshotOpen, snapshotClose)
	}
	return t, nil
}

// imageTokens is what Anthropic bills for an image of this size
// (width×height/750; screenshots of 1280×800 need no downscaling).
func imageTokens(data []byte) (int, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("screenshot: %w", err)
	}
	return cfg.Width * cfg.Height / 750, nil
}

// snapshotSpans returns the delimited page snapshots in s, delimiters
// included.
func snapshotSpans(s string) []string {
	var out []string
	for {
		i := strings.Index(s, snapshotOpen)
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], snapshotClose)
		if j < 0 {
			return out
		}
		end := i + j + len(snapshotClose)
		out = append(out, s[i:end])
		s = s[end:]
	}
}

// latestSnapshot returns the text of the newest page snapshot in req's
// newest message: the opening message's page, or the snapshot field of a
// tool result.
func latestSnapshot(req *llm.Request) (string, bool) {
	if len(req.Messages) == 0 {
		return "", false
	}
	found, ok := "", false
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		text := p.Text
		if p.ToolResult != nil {
			var body struct {
				Snapshot string `json:"snapshot"`
			}
			if json.Unmarshal([]byte(p.ToolResult.Content), &body) != nil {
				continue
			}
			text = body.Snapshot
		}
		if spans := snapshotSpans(text); len(spans) > 0 {
			found, ok = spans[len(spans)-1], true
		}
	}
	return found, ok
}

// snapshotElement is one element line of a rendered snapshot.
type snapshotElement struct {
	ref, role, name string
	disabled        bool
}

// elementLine matches `@e3 button "Delete" [Alice Smith] disabled`.
var elementLine = regexp.MustCompile(`(?m)^(@e\d+) (\S+)(?: ("(?:[^"\\]|\\.)*"))?(.*)$`)

// parseSnapshotElements lists the elements of a snapshot's text
// (browser.Snapshot.Text), in order.
func parseSnapshotElements(text string) []snapshotElement {
	var out []snapshotElement
	for _, m := range elementLine.FindAllStringSubmatch(text, -1) {
		e := snapshotElement{ref: m[1], role: m[2]}
		if m[3] != "" {
			if name, err := strconv.Unquote(m[3]); err == nil {
				e.name = name
			}
		}
		rest := strings.Fields(m[4])
		for _, f := range rest {
			if f == "disabled" || f == "readonly" {
				e.disabled = true
			}
		}
		out = append(out, e)
	}
	return out
}
