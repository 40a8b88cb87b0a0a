package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Limits of a suite file.
const (
	// MaxFileBytes bounds a suite file's size: 1 MiB.
	MaxFileBytes = 1 << 20
	// MaxFileTests bounds the tests of a suite file.
	MaxFileTests = 500
)

// expandBudget bounds what a file may expand to through aliases (a small
// file of nested aliases can otherwise stand for gigabytes).
const expandBudget = 8 << 20

// FileError is a problem of a suite file. ParseFile's errors are all
// *FileError.
type FileError struct {
	// Line is the 1-based line of the offending YAML; 0 when the file as a
	// whole is at fault.
	Line int
	// Path names the offending value, e.g. "tests[1].oracles[0]"; empty
	// for the file as a whole.
	Path string
	// Problem says what is wrong.
	Problem string
}

// Error reads "line 12: tests[1].oracles[0]: unknown field "txt_present"".
func (e *FileError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// The keys of a suite file's top level and of a test, in the order
// MarshalFile writes them, with the message field each one fills.
var (
	suiteKeys = []fileKey{
		{"suite", "name"}, {"description", "description"}, {"concurrency", "concurrency"},
		{"default_timeout", "default_timeout"}, {"tags", "tags"}, {"tests", "tests"},
	}
	testKeys = []fileKey{
		{"name", "name"}, {"description", "description"}, {"tags", "tags"}, {"retries", "retries"},
		{"timeout", "timeout"}, {"pass_threshold", "pass_threshold"}, {"run", "params"}, {"oracles", "oracles"},
	}
)

type fileKey struct{ key, field string }

func keyNames(keys []fileKey) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.key
	}
	return strings.Join(names, ", ")
}

func lookupKey(keys []fileKey, key string) (string, bool) {
	for _, k := range keys {
		if k.key == key {
			return k.field, true
		}
	}
	return "", false
}

var (
	suiteDesc  = (&wfv1.Suite{}).ProtoReflect().Descriptor()
	testDesc   = (&wfv1.Test{}).ProtoReflect().Descriptor()
	oracleDesc = (&wfv1.Oracle{}).ProtoReflect().Descriptor()
	paramsDesc = (&wfv1.RunParams{}).ProtoReflect().Descriptor()
)

// ParseFile reads a suite file (docs/suites.md): its suite, whose Tests
// are the file's tests' names in order, and the tests. It is strict:
// unknown keys, values of the wrong type, duplicate keys or test names,
// a missing suite or test name, an oracle without a check, more than one
// YAML document, more than MaxFileBytes or MaxFileTests are errors, each a
// *FileError naming the line. Run parameters use protojson's field names
// (snake_case) and values; durations are Go durations ("90s", "2m",
// "1h30m"), which include protojson's ("120s", "1.5s"). Anchors, aliases
// and merge keys ("<<") are allowed. What it does not check is left to the
// TestService's validation: name syntax, ranges, limits, references.
func ParseFile(data []byte) (*wfv1.Suite, []*wfv1.Test, error) {
	if len(data) > MaxFileBytes {
		return nil, nil, &FileError{Problem: fmt.Sprintf("the file is %d bytes; a suite file is at most 1 MiB", len(data))}
	}
	root, err := decodeDocument(data)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{budget: expandBudget}
	return p.file(root)
}

// decodeDocument parses data into its one YAML document's root node.
func decodeDocument(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library has panicked on malformed input before; a
		// file is user input, so that must not take a server down.
		if r := recover(); r != nil {
			root, err = nil, &FileError{Problem: fmt.Sprintf("unreadable YAML (%v)", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FileError{Problem: "the file is empty"}
		}
		return nil, yamlError(err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(err)
	default:
		return nil, &FileError{Line: more.Line, Problem: "a second YAML document: a suite file holds one suite"}
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, &FileError{Problem: "the file is empty"}
		}
		return doc.Content[0], nil
	}
	return &doc, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns the YAML library's syntax error into a *FileError.
func yamlError(err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FileError{Line: line, Problem: "invalid YAML: " + m[2]}
	}
	return &FileError{Problem: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// parser converts YAML nodes into the JSON form of messages, which
// protojson then reads: the walk checks keys and types against the message
// descriptors so that every error names its line.
type parser struct {
	budget int
}

func (p *parser) errorf(n *yaml.Node, path, format string, args ...any) error {
	e := &FileError{Path: path, Problem: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// deref follows aliases, charges the node to the expansion budget and
// refuses application tags.
func (p *parser) deref(n *yaml.Node, path string) (*yaml.Node, error) {
	at := n
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	p.budget -= len(n.Value) + 16
	if p.budget < 0 {
		return nil, p.errorf(at, path, "the file expands to too much data through aliases")
	}
	if tag := n.ShortTag(); !strings.HasPrefix(tag, "!!") {
		return nil, p.errorf(at, path, "unsupported YAML tag %q", tag)
	}
	return n, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		}
		return fmt.Sprintf("a string (%q)", clipRunes(n.Value, 40))
	}
	return "something else"
}

// entry is one key of a mapping.
type entry struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// mapping returns the entries of mapping n (already dereferenced), merge
// keys resolved (explicit keys win, then earlier merged mappings).
// Duplicate keys are errors.
func (p *parser) mapping(n *yaml.Node, path string) ([]entry, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, path, "expected a mapping, got %s", describe(n))
	}
	out := make([]entry, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.deref(n.Content[i], path)
		if err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(k, path, "a key must be a string, not %s", describe(k))
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, n.Content[i+1])
			continue
		}
		if seen[k.Value] {
			return nil, p.errorf(k, path, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		out = append(out, entry{key: k.Value, keyNode: k, val: n.Content[i+1]})
	}
	for _, m := range merges {
		md, err := p.deref(m, path)
		if err != nil {
			return nil, err
		}
		sources := []*yaml.Node{md}
		if md.Kind == yaml.SequenceNode {
			sources = md.Content
		}
		for _, src := range sources {
			src, err := p.deref(src, path)
			if err != nil {
				return nil, err
			}
			if src.Kind != yaml.MappingNode {
				return nil, p.errorf(src, path, "a merge key (<<) takes a mapping or a list of mappings, not %s", describe(src))
			}
			merged, err := p.mapping(src, path)
			if err != nil {
				return nil, err
			}
			for _, e := range merged {
				if !seen[e.key] {
					seen[e.key] = true
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// file converts the file's root mapping.
func (p *parser) file(root *yaml.Node) (*wfv1.Suite, []*wfv1.Test, error) {
	root, err := p.deref(root, "")
	if err != nil {
		return nil, nil, err
	}
	if isNull(root) {
		return nil, nil, &FileError{Problem: "the file is empty"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, p.errorf(root, "", "a suite file is a mapping with the keys %s; got %s", keyNames(suiteKeys), describe(root))
	}
	ents, err := p.mapping(root, "")
	if err != nil {
		return nil, nil, err
	}
	obj := map[string]any{}
	var testsNode, nameNode *yaml.Node
	for _, e := range ents {
		field, ok := lookupKey(suiteKeys, e.key)
		switch {
		case !ok:
			return nil, nil, p.errorf(e.keyNode, "", "unknown field %q (a suite file has %s)", e.key, keyNames(suiteKeys))
		case e.key == "tests":
			testsNode = e.val
			continue
		case e.key == "suite":
			nameNode = e.val
		}
		v, set, err := p.field(e.val, suiteDesc.Fields().ByName(protoreflect.Name(field)), e.key)
		if err != nil {
			return nil, nil, err
		}
		if set {
			obj[field] = v
		}
	}
	if nameNode == nil {
		return nil, nil, p.errorf(root, "suite", "missing: the suite's name")
	}
	if testsNode == nil {
		return nil, nil, p.errorf(root, "tests", "missing: the suite's tests")
	}
	tests, err := p.tests(testsNode)
	if err != nil {
		return nil, nil, err
	}
	s := &wfv1.Suite{}
	if err := unmarshalJSON(obj, s); err != nil {
		return nil, nil, p.errorf(root, "", "%v", err)
	}
	if s.GetName() == "" {
		return nil, nil, p.errorf(nameNode, "suite", "must not be empty")
	}
	for _, t := range tests {
		s.Tests = append(s.Tests, t.GetName())
	}
	return s, tests, nil
}

// tests converts the tests list.
func (p *parser) tests(n *yaml.Node) ([]*wfv1.Test, error) {
	n, err := p.deref(n, "tests")
	if err != nil {
		return nil, err
	}
	switch {
	case n.Kind != yaml.SequenceNode:
		return nil, p.errorf(n, "tests", "expected a list of tests, got %s", describe(n))
	case len(n.Content) == 0:
		return nil, p.errorf(n, "tests", "a suite needs at least one test")
	case len(n.Content) > MaxFileTests:
		return nil, p.errorf(n, "tests", "%d tests; a suite file holds at most %d", len(n.Content), MaxFileTests)
	}
	tests := make([]*wfv1.Test, 0, len(n.Content))
	first := make(map[string]int, len(n.Content))
	for i, item := range n.Content {
		path := fmt.Sprintf("tests[%d]", i)
		t, nameNode, err := p.test(item, path)
		if err != nil {
			return nil, err
		}
		if j, dup := first[t.GetName()]; dup {
			return nil, p.errorf(nameNode, path+".name", "duplicate test name %q (also tests[%d])", t.GetName(), j)
		}
		first[t.GetName()] = i
		tests = append(tests, t)
	}
	return tests, nil
}

// test converts one test; it returns the node of its name for errors.
func (p *parser) test(item *yaml.Node, path string) (*wfv1.Test, *yaml.Node, error) {
	n, err := p.deref(item, path)
	if err != nil {
		return nil, nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, p.errorf(n, path, "a test is a mapping with the keys %s; got %s", keyNames(testKeys), describe(n))
	}
	ents, err := p.mapping(n, path)
	if err != nil {
		return nil, nil, err
	}
	obj := map[string]any{}
	var nameNode *yaml.Node
	for _, e := range ents {
		field, ok := lookupKey(testKeys, e.key)
		if !ok {
			return nil, nil, p.errorf(e.keyNode, path, "unknown field %q%s", e.key, testKeyHint(e.key))
		}
		fpath := join(path, e.key)
		var (
			v   any
			set bool
		)
		switch e.key {
		case "oracles":
			v, set, err = p.oracles(e.val, fpath)
		default:
			if e.key == "name" {
				nameNode = e.val
			}
			v, set, err = p.field(e.val, testDesc.Fields().ByName(protoreflect.Name(field)), fpath)
		}
		if err != nil {
			return nil, nil, err
		}
		if set {
			obj[field] = v
		}
	}
	if nameNode == nil {
		return nil, nil, p.errorf(n, path+".name", "missing: every test needs a name")
	}
	t := &wfv1.Test{}
	if err := unmarshalJSON(obj, t); err != nil {
		return nil, nil, p.errorf(n, path, "%v", err)
	}
	if t.GetName() == "" {
		return nil, nil, p.errorf(nameNode, path+".name", "must not be empty")
	}
	return t, nameNode, nil
}

// testKeyHint explains an unknown key of a test that belongs elsewhere.
func testKeyHint(key string) string {
	switch {
	case key == "params":
		return ` (the run parameters go under "run")`
	case paramsDesc.Fields().ByName(protoreflect.Name(key)) != nil:
		return fmt.Sprintf(` (%q is a run parameter: put it under "run")`, key)
	}
	return fmt.Sprintf(" (a test has %s)", keyNames(testKeys))
}

// oracles converts a test's oracles; each must set a check.
func (p *parser) oracles(n *yaml.Node, path string) (any, bool, error) {
	n, err := p.deref(n, path)
	if err != nil || isNull(n) {
		return nil, false, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, false, p.errorf(n, path, "expected a list of oracles, got %s", describe(n))
	}
	check := oracleDesc.Oneofs().ByName("check")
	out := make([]any, 0, len(n.Content))
	for i, item := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		o, err := p.deref(item, ipath)
		if err != nil {
			return nil, false, err
		}
		obj, err := p.message(o, oracleDesc, ipath)
		if err != nil {
			return nil, false, err
		}
		found := false
		for j := 0; j < check.Fields().Len(); j++ {
			if _, ok := obj[string(check.Fields().Get(j).Name())]; ok {
				found = true
			}
		}
		if !found {
			return nil, false, p.errorf(o, ipath, "no check: set one of %s", oneofNames(check))
		}
		out = append(out, obj)
	}
	return out, true, nil
}

func oneofNames(od protoreflect.OneofDescriptor) string {
	names := make([]string, od.Fields().Len())
	for i := range names {
		names[i] = string(od.Fields().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// message converts mapping n (dereferenced) to the JSON object of md, by
// proto field names.
func (p *parser) message(n *yaml.Node, md protoreflect.MessageDescriptor, path string) (map[string]any, error) {
	ents, err := p.mapping(n, path)
	if err != nil {
		return nil, err
	}
	obj := make(map[string]any, len(ents))
	oneofs := map[protoreflect.Name]string{}
	for _, e := range ents {
		fd := md.Fields().ByName(protoreflect.Name(e.key))
		if fd == nil {
			return nil, p.errorf(e.keyNode, path, "unknown field %q%s", e.key, fieldHint(md, e.key))
		}
		v, set, err := p.field(e.val, fd, join(path, e.key))
		if err != nil {
			return nil, err
		}
		if !set {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if prev, dup := oneofs[od.Name()]; dup {
				return nil, p.errorf(e.keyNode, path, "%q and %q are both set; set only one of %s", prev, e.key, oneofNames(od))
			}
			oneofs[od.Name()] = e.key
		}
		obj[string(fd.Name())] = v
	}
	return obj, nil
}

// fieldHint points a camelCase or differently cased key at its field.
func fieldHint(md protoreflect.MessageDescriptor, key string) string {
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if fd.JSONName() == key || strings.EqualFold(string(fd.Name()), key) {
			return fmt.Sprintf(" (did you mean %q?)", fd.Name())
		}
	}
	return ""
}

// field converts the value of fd; set is false when the value is null
// (the field stays unset).
func (p *parser) field(n *yaml.Node, fd protoreflect.FieldDescriptor, path string) (v any, set bool, err error) {
	n, err = p.deref(n, path)
	if err != nil || isNull(n) {
		return nil, false, err
	}
	switch {
	case fd.IsMap():
		ents, err := p.mapping(n, path)
		if err != nil {
			return nil, false, err
		}
		obj := make(map[string]any, len(ents))
		for _, e := range ents {
			v, err := p.element(e.val, fd.MapValue(), join(path, e.key))
			if err != nil {
				return nil, false, err
			}
			obj[e.key] = v
		}
		return obj, true, nil
	case fd.IsList():
		if n.Kind != yaml.SequenceNode {
			return nil, false, p.errorf(n, path, "expected a list, got %s", describe(n))
		}
		arr := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := p.element(item, fd, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, false, err
			}
			arr = append(arr, v)
		}
		return arr, true, nil
	}
	v, err = p.value(n, fd, path)
	return v, err == nil, err
}

// element converts a list item or map value, which cannot be null.
func (p *parser) element(n *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	n, err := p.deref(n, path)
	if err != nil {
		return nil, err
	}
	if isNull(n) {
		return nil, p.errorf(n, path, "a value is required, not null")
	}
	return p.value(n, fd, path)
}

// value converts a singular value (dereferenced, not null) of fd's kind.
func (p *parser) value(n *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return p.messageValue(n, fd.Message(), path)
	case protoreflect.EnumKind:
		return p.enum(n, fd.Enum(), path)
	case protoreflect.BoolKind:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return nil, p.errorf(n, path, "expected true or false, got %s", describe(n))
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, p.errorf(n, path, "expected true or false, got %s", describe(n))
		}
		return json.RawMessage(strconv.FormatBool(b)), nil
	case protoreflect.StringKind, protoreflect.BytesKind:
		return p.text(n, path)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return p.integer(n, path, math.MinInt32, math.MaxInt32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return p.integer(n, path, math.MinInt64, math.MaxInt64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return p.unsigned(n, path, math.MaxUint32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return p.unsigned(n, path, math.MaxUint64)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return p.float(n, path)
	}
	return nil, p.errorf(n, path, "unsupported field kind %v", fd.Kind())
}

// text reads any scalar as its text: "404" in a text field means the text
// 404. Mappings and lists are errors.
func (p *parser) text(n *yaml.Node, path string) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, p.errorf(n, path, "expected a string, got %s", describe(n))
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp", "!!binary":
		return n.Value, nil
	}
	return nil, p.errorf(n, path, "expected a string, got %s", describe(n))
}

func (p *parser) integer(n *yaml.Node, path string, lo, hi int64) (any, error) {
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		return nil, p.errorf(n, path, "expected a whole number, got %s", describe(n))
	}
	if i < lo || i > hi {
		return nil, p.errorf(n, path, "%d is out of range", i)
	}
	return json.RawMessage(strconv.FormatInt(i, 10)), nil
}

func (p *parser) unsigned(n *yaml.Node, path string, hi uint64) (any, error) {
	var u uint64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&u) != nil {
		return nil, p.errorf(n, path, "expected a whole number of at least 0, got %s", describe(n))
	}
	if u > hi {
		return nil, p.errorf(n, path, "%d is out of range", u)
	}
	return json.RawMessage(strconv.FormatUint(u, 10)), nil
}

func (p *parser) float(n *yaml.Node, path string) (any, error) {
	var f float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil {
		return nil, p.errorf(n, path, "expected a number, got %s", describe(n))
	}
	switch {
	case math.IsNaN(f):
		return "NaN", nil
	case math.IsInf(f, 1):
		return "Infinity", nil
	case math.IsInf(f, -1):
		return "-Infinity", nil
	}
	return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

func (p *parser) enum(n *yaml.Node, ed protoreflect.EnumDescriptor, path string) (any, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		return p.integer(n, path, math.MinInt32, math.MaxInt32)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if ed.Values().ByName(protoreflect.Name(n.Value)) != nil {
			return n.Value, nil
		}
	}
	names := make([]string, ed.Values().Len())
	for i := range names {
		names[i] = string(ed.Values().Get(i).Name())
	}
	return nil, p.errorf(n, path, "expected one of %s, got %s", strings.Join(names, ", "), describe(n))
}

// messageValue converts a message value, with the well-known types in
// their JSON forms.
func (p *parser) messageValue(n *yaml.Node, md protoreflect.MessageDescriptor, path string) (any, error) {
	switch md.FullName() {
	case "google.protobuf.Duration":
		if n.Kind != yaml.ScalarNode {
			return nil, p.errorf(n, path, "expected a duration like \"90s\" or \"2m\", got %s", describe(n))
		}
		d, err := parseDuration(n.Value)
		if err != nil {
			return nil, p.errorf(n, path, "%v", err)
		}
		return d, nil
	case "google.protobuf.Timestamp":
		if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || n.ShortTag() == "!!timestamp") {
			if t, err := time.Parse(time.RFC3339Nano, n.Value); err == nil {
				return t.UTC().Format(time.RFC3339Nano), nil
			}
		}
		return nil, p.errorf(n, path, "expected an RFC 3339 time like 2026-01-02T15:04:05Z, got %s", describe(n))
	case "google.protobuf.Struct":
		if n.Kind != yaml.MappingNode {
			return nil, p.errorf(n, path, "expected a mapping, got %s", describe(n))
		}
		return p.plain(n, path)
	case "google.protobuf.ListValue":
		if n.Kind != yaml.SequenceNode {
			return nil, p.errorf(n, path, "expected a list, got %s", describe(n))
		}
		return p.plain(n, path)
	case "google.protobuf.Value":
		return p.plain(n, path)
	case "google.protobuf.Empty":
		ents, err := p.mapping(n, path)
		if err != nil {
			return nil, err
		}
		if len(ents) > 0 {
			return nil, p.errorf(ents[0].keyNode, path, "expected an empty mapping ({})")
		}
		return map[string]any{}, nil
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return p.value(n, md.Fields().ByName("value"), path)
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return nil, p.errorf(n, path, "unsupported type %s", md.FullName())
	}
	return p.message(n, md, path)
}

// plain converts any YAML value to JSON (a Struct, Value or ListValue).
func (p *parser) plain(n *yaml.Node, path string) (any, error) {
	n, err := p.deref(n, path)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.MappingNode:
		ents, err := p.mapping(n, path)
		if err != nil {
			return nil, err
		}
		obj := make(map[string]any, len(ents))
		for _, e := range ents {
			v, err := p.plain(e.val, join(path, e.key))
			if err != nil {
				return nil, err
			}
			obj[e.key] = v
		}
		return obj, nil
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := p.plain(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return json.RawMessage("null"), nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, p.errorf(n, path, "%v", err)
			}
			return b, nil
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, p.errorf(n, path, "expected a number, got %s", describe(n))
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, p.errorf(n, path, "%s is not a JSON number", n.Value)
			}
			return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)), nil
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, nil
		}
	}
	return nil, p.errorf(n, path, "unsupported value %s", describe(n))
}

// protoDuration is protojson's duration form, which also covers durations
// beyond time.Duration's ±292 years.
var protoDuration = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// maxProtoSeconds is google.protobuf.Duration's range: ±10000 years.
const maxProtoSeconds = 315_576_000_000

// parseDuration reads a Go duration ("90s", "2m", "1h30m", "1.5s") or
// protojson's form and returns the protojson form.
func parseDuration(s string) (string, error) {
	if d, err := time.ParseDuration(s); err == nil {
		b, err := protojson.Marshal(durationpb.New(d))
		if err != nil {
			return "", err
		}
		var out string
		if err := json.Unmarshal(b, &out); err != nil {
			return "", err
		}
		return out, nil
	}
	if protoDuration.MatchString(s) {
		whole, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "-"), "s"), ".")
		if sec, err := strconv.ParseInt(whole, 10, 64); err != nil || sec > maxProtoSeconds {
			return "", fmt.Errorf("duration %q is out of range (at most 10000 years)", s)
		}
		return s, nil
	}
	return "", fmt.Errorf("invalid duration %q (write it like \"90s\", \"2m\" or \"1h30m\")", s)
}

// protoErrPrefix is protojson's error prefix (it spells the space as a
// no-break space at random) and the position in the JSON, which means
// nothing to the file's reader.
var protoErrPrefix = regexp.MustCompile(`^proto:[\s\x{00a0}]*(\(line \d+:\d+\):[\s\x{00a0}]*)?`)

// unmarshalJSON reads obj, the JSON form built by the parser, into m.
func unmarshalJSON(obj map[string]any, m proto.Message) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		return errors.New(protoErrPrefix.ReplaceAllString(err.Error(), ""))
	}
	return nil
}
