package schema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/schema"
)

func TestCompile(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "object schema", raw: `{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}`},
		{name: "not JSON", raw: `{"type":`, wantErr: "not valid JSON"},
		{name: "remote reference", raw: `{"$ref": "https://example.com/s.json"}`, wantErr: `reference to "https://example.com/s.json" refused: only references inside the schema resolve`},
		{name: "file reference", raw: `{"$ref": "file:///etc/passwd"}`, wantErr: "refused"},
		{name: "not a schema", raw: `{"type": 7}`, wantErr: "not a valid JSON Schema: at '/type'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch, _, err := schema.Compile([]byte(c.raw), "input_schema")
			if c.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, sch)
				return
			}
			require.ErrorContains(t, err, c.wantErr)
			require.NotContains(t, err.Error(), "\n")
			require.NotContains(t, err.Error(), "mem://", "the internal URL stays out of messages")
		})
	}
}

func TestDescribe(t *testing.T) {
	sch, _, err := schema.Compile([]byte(`{"type": "array", "items": {"type": "object", "required": ["sku"]}}`), "data_schema")
	require.NoError(t, err)
	var items []string
	for i := range 7 {
		items = append(items, fmt.Sprintf(`{"n": %d}`, i))
	}
	doc, err := schema.Parse([]byte("[" + strings.Join(items, ",") + "]"))
	require.NoError(t, err)
	msg := schema.Describe(sch.Validate(doc))
	require.Equal(t, 5, strings.Count(msg, "missing property 'sku'"), msg)
	require.Contains(t, msg, "at '/0'")
	require.True(t, strings.HasSuffix(msg, "and 2 more"), msg)
}
