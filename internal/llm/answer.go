package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ToolAnswer reads a structured answer that a model was told to give by
// calling tool: the arguments of the first call of tool that parse, else a
// JSON object in the text (a fenced block, the whole text, or the span from
// the first '{' to the last '}') that parses. parse reads one candidate.
// The error says why there is no answer: the calls' parse errors, another
// tool called, an empty answer, or none in the text.
func ToolAnswer[T any](resp *Response, tool string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	if resp == nil {
		return zero, errors.New("no answer")
	}
	var errs []error
	for _, tc := range resp.ToolCalls {
		if tc.Name != tool {
			continue
		}
		v, err := parse(tc.Arguments)
		if err == nil {
			return v, nil
		}
		errs = append(errs, fmt.Errorf("%s arguments: %w", tool, err))
	}
	for _, cand := range jsonCandidates(resp.Text) {
		if v, err := parse([]byte(cand)); err == nil {
			return v, nil
		}
	}
	switch {
	case len(errs) > 0:
		return zero, errors.Join(errs...)
	case len(resp.ToolCalls) > 0:
		return zero, fmt.Errorf("called %s instead of %s", resp.ToolCalls[0].Name, tool)
	case strings.TrimSpace(resp.Text) == "":
		return zero, errors.New("empty answer")
	default:
		return zero, fmt.Errorf("no %s call and no answer object in the text", tool)
	}
}

var fence = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*(.*?)```")

// jsonCandidates returns the texts in text that may hold an answer object:
// fenced blocks, the whole text, the span from the first '{' to the last
// '}'.
func jsonCandidates(text string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	if t := strings.TrimSpace(text); t != "" {
		out = append(out, t)
	}
	if i, k := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && k > i {
		out = append(out, text[i:k+1])
	}
	return out
}

// DecodeArgs decodes a tool call's arguments into v (a pointer to a
// struct) the way models write them: the object itself, the object
// encoded as a JSON string, or, when required is not among its keys, the
// object nested under "arguments", "input", "parameters" or the tool's
// name (a tool call written as text). The caller still checks the values,
// a required one that is null included.
func DecodeArgs(raw []byte, tool, required string, v any) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = []byte(s)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	if _, ok := obj[required]; !ok {
		for _, k := range []string{"arguments", "input", "parameters", tool} {
			if inner, ok := obj[k]; ok {
				return DecodeArgs(inner, tool, required, v)
			}
		}
		return fmt.Errorf("%q is missing", required)
	}
	return json.Unmarshal(raw, v)
}
