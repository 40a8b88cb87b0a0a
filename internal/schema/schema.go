// Package schema compiles and applies the JSON Schemas users give Wayfinder
// (a tool's input and output schemas, a test's data_schema oracle): draft
// 2020-12 unless a schema says otherwise, nothing outside a schema is ever
// loaded, and every error is one line.
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxErrors bounds how many validation failures one message lists.
const maxErrors = 5

// ErrRemoteRef is what the loader answers for every document outside the
// schema itself.
var ErrRemoteRef = errors.New("only references inside the schema resolve")

// memURL is the base of the URL a schema is compiled under; it never
// reaches the loader.
const memURL = "mem://schema/"

// noRemoteLoader refuses to load any document: the compiler then resolves
// only the schema added as a resource and the metaschemas it embeds.
type noRemoteLoader struct{}

func (noRemoteLoader) Load(string) (any, error) { return nil, ErrRemoteRef }

// Parse decodes one JSON value keeping numbers exact, as the validator
// wants them.
func Parse(raw []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// Compile compiles one schema document; name ("input_schema") is how it is
// known in error messages. It returns the parsed document too.
func Compile(raw []byte, name string) (*jsonschema.Schema, any, error) {
	doc, err := Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemoteLoader{})
	url := memURL + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, errors.New(strings.ReplaceAll(oneLine(err.Error()), url, name))
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
		return fmt.Sprintf("reference to %q refused: %v", load.URL, ErrRemoteRef)
	case errors.As(err, &meta):
		return "not a valid JSON Schema: " + Describe(meta.Err)
	}
	return oneLine(err.Error())
}

// Describe lists the leaf failures of a validation error, each as
// "at '/path': what", instead of the library's indented tree; at most five,
// then how many more.
func Describe(err error) string {
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
	if more := len(leaves) - maxErrors; more > 0 {
		leaves = append(leaves[:maxErrors], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(leaves, "; ")
}

// oneLine folds a multi-line message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
