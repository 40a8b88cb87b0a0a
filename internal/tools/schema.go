package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxSchemaErrors bounds how many validation failures one message lists.
const maxSchemaErrors = 5

// errRemoteRef is what the loader answers for every document outside the
// schema itself.
var errRemoteRef = errors.New("only references inside the schema resolve")

// memURL is the base of the URL a schema is compiled under; it never
// reaches the loader.
const memURL = "mem://tool/"

// noRemoteLoader refuses to load any document: the compiler then resolves
// only the schema added as a resource and the metaschemas it embeds.
type noRemoteLoader struct{}

func (noRemoteLoader) Load(string) (any, error) { return nil, errRemoteRef }

// absent reports whether an optional schema was left out.
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// parseJSON decodes one JSON value keeping numbers exact, as the validator
// wants them.
func parseJSON(raw []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// compileSchema compiles one schema document; loc names it ("input_schema")
// in error messages. It returns the parsed document too.
func compileSchema(raw json.RawMessage, loc string) (*jsonschema.Schema, any, error) {
	doc, err := parseJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemoteLoader{})
	url := memURL + loc + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, nil, errors.New(strings.ReplaceAll(describeCompileError(err), url, ""))
	}
	return sch, doc, nil
}

// describeCompileError turns the compiler's error into one line.
func describeCompileError(err error) string {
	var (
		load *jsonschema.LoadURLError
		meta *jsonschema.SchemaValidationError
	)
	switch {
	case errors.As(err, &load):
		return fmt.Sprintf("reference to %q refused: %v", load.URL, errRemoteRef)
	case errors.As(err, &meta):
		return "not a valid JSON Schema: " + describeValidation(meta.Err)
	}
	return oneLine(err.Error())
}

// describeValidation lists the leaf failures of a validation error, each as
// "at '/path': what", instead of the library's indented tree.
func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return oneLine(err.Error())
	}
	var leaves []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaf := &jsonschema.ValidationError{InstanceLocation: e.InstanceLocation, ErrorKind: e.ErrorKind}
			leaves = append(leaves, oneLine(leaf.Error()))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	more := len(leaves) - maxSchemaErrors
	if more > 0 {
		leaves = append(leaves[:maxSchemaErrors], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(leaves, "; ")
}

// oneLine folds a multi-line message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// isObjectSchema reports whether a schema document declares "type": "object",
// as every model vendor requires of tool inputs.
func isObjectSchema(doc any) bool {
	obj, ok := doc.(map[string]any)
	return ok && obj["type"] == "object"
}
