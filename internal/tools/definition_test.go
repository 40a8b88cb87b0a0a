package tools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wayfinder/wayfinder/internal/tools"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// validDefinition is a definition Validate accepts; cases change one thing.
func validDefinition() tools.Definition {
	return tools.Definition{
		Name:        "lookup_order",
		Description: "Looks up an order by its number.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
		Webhook: tools.Webhook{
			URL:     "https://tools.example.com/orders",
			Headers: map[string]string{"Authorization": "Bearer s3cr3t-value"},
		},
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	reserved := func(name string) bool { return name == "click" || name == "done" }

	tests := []struct {
		name   string
		change func(d *tools.Definition)
		// field and a fragment of the message of the one expected problem;
		// field "" means the definition is valid.
		field, msg string
	}{
		{name: "valid", change: func(*tools.Definition) {}},
		{name: "valid with output schema and in-document refs", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","$defs":{"id":{"type":"string","pattern":"^[0-9]+$"}},"properties":{"order":{"$ref":"#/$defs/id"}}}`)
			d.OutputSchema = json.RawMessage(`{"type":"object","properties":{"status":{"enum":["open","shipped"]}}}`)
		}},
		{name: "valid with explicit draft", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`)
		}},
		{name: "null output schema is absent", change: func(d *tools.Definition) { d.OutputSchema = json.RawMessage(`null`) }},
		{name: "http on 127.0.0.1", change: func(d *tools.Definition) { d.Webhook.URL = "http://127.0.0.1:8080/hook" }},
		{name: "http on ::1", change: func(d *tools.Definition) { d.Webhook.URL = "http://[::1]:8080/hook" }},
		{name: "http on localhost", change: func(d *tools.Definition) { d.Webhook.URL = "http://localhost/hook" }},
		{name: "maximum timeout", change: func(d *tools.Definition) { d.Webhook.Timeout = tools.MaxTimeout }},

		{name: "name missing", change: func(d *tools.Definition) { d.Name = "" }, field: "name", msg: "required"},
		{name: "name with a space", change: func(d *tools.Definition) { d.Name = "lookup order" }, field: "name", msg: "1-64 characters"},
		{name: "name too long", change: func(d *tools.Definition) { d.Name = strings.Repeat("a", 65) }, field: "name", msg: "1-64 characters"},
		{name: "name reserved", change: func(d *tools.Definition) { d.Name = "click" }, field: "name", msg: "built-in"},
		{name: "description too long", change: func(d *tools.Definition) {
			d.Description = strings.Repeat("é", tools.MaxDescriptionLen+1)
		}, field: "description", msg: "at most 4096"},
		{name: "description not UTF-8", change: func(d *tools.Definition) { d.Description = "\xff" }, field: "description", msg: "UTF-8"},
		{name: "input schema missing", change: func(d *tools.Definition) { d.InputSchema = nil }, field: "input_schema", msg: "required"},
		{name: "input schema not JSON", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":`)
		}, field: "input_schema", msg: "not valid JSON"},
		{name: "input schema not an object schema", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"string"}`)
		}, field: "input_schema", msg: `"type": "object"`},
		{name: "input schema is a boolean", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`true`)
		}, field: "input_schema", msg: `"type": "object"`},
		{name: "input schema keyword of the wrong type", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"minLength":"x"}}}`)
		}, field: "input_schema", msg: "at '/properties/a/minLength': got string, want integer"},
		{name: "input schema bad pattern", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"(?<"}}}`)
		}, field: "input_schema", msg: "not valid regex"},
		{name: "input schema dangling in-document ref", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`)
		}, field: "input_schema", msg: "not found"},
		{name: "input schema https ref refused", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://schemas.example.com/a.json"}}}`)
		}, field: "input_schema", msg: `reference to "https://schemas.example.com/a.json" refused`},
		{name: "input schema file ref refused", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)
		}, field: "input_schema", msg: "refused"},
		{name: "input schema relative ref refused", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"other.json#/a"}}}`)
		}, field: "input_schema", msg: "refused"},
		{name: "input schema remote metaschema refused", change: func(d *tools.Definition) {
			d.InputSchema = json.RawMessage(`{"$schema":"https://schemas.example.com/meta","type":"object"}`)
		}, field: "input_schema", msg: "refused"},
		{name: "output schema invalid", change: func(d *tools.Definition) {
			d.OutputSchema = json.RawMessage(`{"type":"nonsense"}`)
		}, field: "output_schema", msg: "not a valid JSON Schema"},
		{name: "output schema remote ref refused", change: func(d *tools.Definition) {
			d.OutputSchema = json.RawMessage(`{"$ref":"https://schemas.example.com/out.json"}`)
		}, field: "output_schema", msg: "refused"},
		{name: "url missing", change: func(d *tools.Definition) { d.Webhook.URL = "" }, field: "webhook.url", msg: "required"},
		{name: "url relative", change: func(d *tools.Definition) { d.Webhook.URL = "/hook" }, field: "webhook.url", msg: "absolute"},
		{name: "url without host", change: func(d *tools.Definition) { d.Webhook.URL = "https:///hook" }, field: "webhook.url", msg: "absolute"},
		{name: "url other scheme", change: func(d *tools.Definition) { d.Webhook.URL = "ftp://tools.example.com/x" }, field: "webhook.url", msg: "https"},
		{name: "url http to a remote host", change: func(d *tools.Definition) {
			d.Webhook.URL = "http://tools.example.com/hook"
		}, field: "webhook.url", msg: "loopback"},
		{name: "url http to a private address", change: func(d *tools.Definition) {
			d.Webhook.URL = "http://10.0.0.1/hook"
		}, field: "webhook.url", msg: "loopback"},
		{name: "url with credentials", change: func(d *tools.Definition) {
			d.Webhook.URL = "https://user:pw@tools.example.com/hook"
		}, field: "webhook.url", msg: "credentials"},
		{name: "url too long", change: func(d *tools.Definition) {
			d.Webhook.URL = "https://tools.example.com/" + strings.Repeat("a", 2048)
		}, field: "webhook.url", msg: "at most"},
		{name: "header name invalid", change: func(d *tools.Definition) {
			d.Webhook.Headers = map[string]string{"X Key": "v"}
		}, field: "webhook.headers", msg: "not a valid header name"},
		{name: "header set by the call", change: func(d *tools.Definition) {
			d.Webhook.Headers = map[string]string{"content-type": "text/plain"}
		}, field: "webhook.headers", msg: "cannot be overridden"},
		{name: "header value with a line break", change: func(d *tools.Definition) {
			d.Webhook.Headers = map[string]string{"X-Key": "s3cr3t\r\nX-Evil: 1"}
		}, field: "webhook.headers", msg: `value of "X-Key"`},
		{name: "too many headers", change: func(d *tools.Definition) {
			d.Webhook.Headers = map[string]string{}
			for i := range 33 {
				d.Webhook.Headers["X-H"+strings.Repeat("a", i)] = "v"
			}
		}, field: "webhook.headers", msg: "at most 32"},
		{name: "timeout negative", change: func(d *tools.Definition) { d.Webhook.Timeout = -time.Second }, field: "webhook.timeout", msg: "negative"},
		{name: "timeout too long", change: func(d *tools.Definition) {
			d.Webhook.Timeout = tools.MaxTimeout + time.Second
		}, field: "webhook.timeout", msg: "at most 5m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := validDefinition()
			tt.change(&d)
			ps := tools.Validate(d, reserved)
			if tt.field == "" {
				require.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1, "problems: %+v", ps)
			require.Equal(t, tt.field, ps[0].Field)
			require.Contains(t, ps[0].Message, tt.msg)
			require.NotContains(t, ps[0].Message, "s3cr3t", "a header value leaked into a problem")
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()

	ps := tools.Validate(tools.Definition{Webhook: tools.Webhook{Timeout: -1}}, nil)
	var fields []string
	for _, p := range ps {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"name", "input_schema", "webhook.url", "webhook.timeout"}, fields)
}

func TestValidateNilReserved(t *testing.T) {
	t.Parallel()

	d := validDefinition()
	d.Name = "click"
	require.Empty(t, tools.Validate(d, nil))
}
