package tools

import (
	"bytes"
	"encoding/json"
	"strings"
)

// absent reports whether an optional schema was left out.
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// isObjectSchema reports whether a schema document declares "type": "object",
// as every model vendor requires of tool inputs.
func isObjectSchema(doc any) bool {
	obj, ok := doc.(map[string]any)
	return ok && obj["type"] == "object"
}

// oneLine folds a multi-line message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
