package suite

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// MarshalFile writes s and its tests as a suite file that ParseFile reads
// back to equal messages (proto.Equal). Keys come in a stable order: the
// suite's (suite, description, concurrency, default_timeout, tags, tests),
// each test's (name, description, tags, retries, timeout, pass_threshold,
// run, oracles), an oracle's name and check first, then the other
// messages' fields in declaration order and map keys sorted. Unset fields
// are left out; durations are written as Go durations ("1m30s"). Output
// only fields (create_time, update_time) are not part of a file. s.Tests,
// when set, must name tests in order; the suite and every test need a
// name, test names must be unique, and there must be a test.
func MarshalFile(s *wfv1.Suite, tests []*wfv1.Test) ([]byte, error) {
	if s.GetName() == "" {
		return nil, errors.New("suite: marshal file: the suite has no name")
	}
	if len(tests) == 0 {
		return nil, errors.New("suite: marshal file: a suite file needs at least one test")
	}
	names := make([]string, len(tests))
	seen := make(map[string]bool, len(tests))
	for i, t := range tests {
		switch name := t.GetName(); {
		case name == "":
			return nil, fmt.Errorf("suite: marshal file: test %d has no name", i)
		case seen[name]:
			return nil, fmt.Errorf("suite: marshal file: two tests are named %q", name)
		default:
			names[i], seen[name] = name, true
		}
	}
	if len(s.GetTests()) > 0 && !slices.Equal(s.GetTests(), names) {
		return nil, fmt.Errorf("suite: marshal file: the suite lists the tests %q, not %q", s.GetTests(), names)
	}

	root, err := keyedMessage(s.ProtoReflect(), suiteKeys[:len(suiteKeys)-1])
	if err != nil {
		return nil, fmt.Errorf("suite: marshal file: %w", err)
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range tests {
		tn, err := keyedMessage(t.ProtoReflect(), testKeys)
		if err != nil {
			return nil, fmt.Errorf("suite: marshal file: test %q: %w", t.GetName(), err)
		}
		list.Content = append(list.Content, tn)
	}
	root.Content = append(root.Content, strNode("tests"), list)

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("suite: marshal file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("suite: marshal file: %w", err)
	}
	return buf.Bytes(), nil
}

// keyedMessage writes the set fields of m under the file's keys.
func keyedMessage(m protoreflect.Message, keys []fileKey) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(k.field))
		if !m.Has(fd) {
			continue
		}
		v, err := fieldNode(m, fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.key, err)
		}
		out.Content = append(out.Content, strNode(k.key), v)
	}
	return out, nil
}

// messageNode writes the set fields of m in declaration order (an
// oracle's check right after its name).
func messageNode(m protoreflect.Message) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, fd := range fieldOrder(m.Descriptor()) {
		if !m.Has(fd) {
			continue
		}
		v, err := fieldNode(m, fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name(), err)
		}
		out.Content = append(out.Content, strNode(string(fd.Name())), v)
	}
	return out, nil
}

// fieldOrder is md's fields in declaration order, except that an oracle
// reads better with its check right after its name.
func fieldOrder(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	fields := make([]protoreflect.FieldDescriptor, 0, md.Fields().Len())
	for i := 0; i < md.Fields().Len(); i++ {
		fields = append(fields, md.Fields().Get(i))
	}
	if md.FullName() == oracleDesc.FullName() {
		rank := func(fd protoreflect.FieldDescriptor) int {
			switch {
			case fd.Name() == "name":
				return 0
			case fd.ContainingOneof() != nil && fd.ContainingOneof().Name() == "check":
				return 1
			}
			return 2
		}
		slices.SortStableFunc(fields, func(a, b protoreflect.FieldDescriptor) int { return rank(a) - rank(b) })
	}
	return fields
}

// fieldNode writes the value of fd in m (a list, a map or one value).
func fieldNode(m protoreflect.Message, fd protoreflect.FieldDescriptor) (*yaml.Node, error) {
	v := m.Get(fd)
	switch {
	case fd.IsList():
		l := v.List()
		out := &yaml.Node{Kind: yaml.SequenceNode}
		for i := 0; i < l.Len(); i++ {
			item, err := valueNode(fd, l.Get(i))
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out.Content = append(out.Content, item)
		}
		flowIfScalars(out)
		return out, nil
	case fd.IsMap():
		var keys []protoreflect.MapKey
		v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return strings.Compare(a.String(), b.String()) })
		out := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			val, err := valueNode(fd.MapValue(), v.Map().Get(k))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.String(), err)
			}
			out.Content = append(out.Content, strNode(k.String()), val)
		}
		return out, nil
	}
	return valueNode(fd, v)
}

// flowIfScalars writes a list of short scalars on one line ([a, b]).
func flowIfScalars(n *yaml.Node) {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode || strings.Contains(c.Value, "\n") || len(c.Value) > 60 {
			return
		}
	}
	n.Style = yaml.FlowStyle
}

// valueNode writes one value of fd's kind.
func valueNode(fd protoreflect.FieldDescriptor, v protoreflect.Value) (*yaml.Node, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageValueNode(v.Message())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return strNode(string(ev.Name())), nil
		}
		return scalarNode("!!int", strconv.FormatInt(int64(v.Enum()), 10)), nil
	case protoreflect.BoolKind:
		return scalarNode("!!bool", strconv.FormatBool(v.Bool())), nil
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return nil, errors.New("invalid UTF-8 in a string")
		}
		return strNode(v.String()), nil
	case protoreflect.BytesKind:
		return strNode(base64.StdEncoding.EncodeToString(v.Bytes())), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return scalarNode("!!int", strconv.FormatInt(v.Int(), 10)), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return scalarNode("!!int", strconv.FormatUint(v.Uint(), 10)), nil
	case protoreflect.FloatKind:
		return floatNode(v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return floatNode(v.Float(), 64), nil
	}
	return nil, fmt.Errorf("unsupported field kind %v", fd.Kind())
}

// messageValueNode writes a message, the well-known types in their file
// forms.
func messageValueNode(m protoreflect.Message) (*yaml.Node, error) {
	switch x := m.Interface().(type) {
	case *durationpb.Duration:
		s, err := formatDuration(x)
		if err != nil {
			return nil, err
		}
		return strNode(s), nil
	case *timestamppb.Timestamp:
		if err := x.CheckValid(); err != nil {
			return nil, err
		}
		return strNode(x.AsTime().UTC().Format(time.RFC3339Nano)), nil
	case *structpb.Struct:
		return plainNode(structpb.NewStructValue(x))
	case *structpb.ListValue:
		return plainNode(structpb.NewListValue(x))
	case *structpb.Value:
		return plainNode(x)
	}
	md := m.Descriptor()
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		if fd := md.Fields().ByName("value"); fd != nil && md.Fields().Len() == 1 {
			return valueNode(fd, m.Get(fd)) // a wrapper
		}
		if md.Fields().Len() == 0 {
			return &yaml.Node{Kind: yaml.MappingNode}, nil // Empty
		}
		return nil, fmt.Errorf("unsupported type %s", md.FullName())
	}
	return messageNode(m)
}

// plainNode writes a JSON value; object keys sorted.
func plainNode(v *structpb.Value) (*yaml.Node, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return scalarNode("!!null", "null"), nil
	case *structpb.Value_BoolValue:
		return scalarNode("!!bool", strconv.FormatBool(k.BoolValue)), nil
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", k.NumberValue)
		}
		return floatNode(k.NumberValue, 64), nil
	case *structpb.Value_StringValue:
		if !utf8.ValidString(k.StringValue) {
			return nil, errors.New("invalid UTF-8 in a string")
		}
		return strNode(k.StringValue), nil
	case *structpb.Value_ListValue:
		out := &yaml.Node{Kind: yaml.SequenceNode}
		for i, item := range k.ListValue.GetValues() {
			n, err := plainNode(item)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out.Content = append(out.Content, n)
		}
		flowIfScalars(out)
		return out, nil
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		keys := make([]string, 0, len(fields))
		for key := range fields {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		out := &yaml.Node{Kind: yaml.MappingNode}
		for _, key := range keys {
			n, err := plainNode(fields[key])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			out.Content = append(out.Content, strNode(key), n)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value %T", v.GetKind())
}

func strNode(s string) *yaml.Node {
	n := &yaml.Node{}
	n.SetString(s)
	return n
}

func scalarNode(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// floatNode writes f so that it reads back exactly: whole numbers without
// a fraction, others in the shortest form that round-trips.
func floatNode(f float64, bits int) *yaml.Node {
	switch {
	case math.IsNaN(f):
		return scalarNode("!!float", ".nan")
	case math.IsInf(f, 1):
		return scalarNode("!!float", ".inf")
	case math.IsInf(f, -1):
		return scalarNode("!!float", "-.inf")
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return scalarNode("!!int", strconv.FormatInt(int64(f), 10)) // -0 too: proto.Equal has -0 == 0
	}
	return scalarNode("!!float", strconv.FormatFloat(f, 'g', -1, bits))
}

// maxGoSeconds bounds the durations time.Duration holds.
const maxGoSeconds = math.MaxInt64/int64(time.Second) - 1

// formatDuration writes d as a Go duration ("2m", "1m30s", "1.5s"), or in
// protojson's form when it is beyond time.Duration's range.
func formatDuration(d *durationpb.Duration) (string, error) {
	if err := d.CheckValid(); err != nil {
		return "", err
	}
	if d.GetSeconds() > maxGoSeconds || d.GetSeconds() < -maxGoSeconds {
		b, err := protojson.Marshal(d)
		if err != nil {
			return "", err
		}
		var s string
		err = json.Unmarshal(b, &s)
		return s, err
	}
	dur := d.AsDuration()
	if dur == 0 {
		return "0s", nil
	}
	var b strings.Builder
	if dur < 0 {
		b.WriteByte('-')
		dur = -dur
	}
	h, rest := dur/time.Hour, dur%time.Hour
	m, rest := rest/time.Minute, rest%time.Minute
	s, ns := rest/time.Second, rest%time.Second
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	switch {
	case ns > 0:
		frac := strings.TrimRight(fmt.Sprintf("%09d", int64(ns)), "0")
		fmt.Fprintf(&b, "%d.%ss", s, frac)
	case s > 0:
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String(), nil
}
