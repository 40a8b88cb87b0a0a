package api

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/wayfinder/wayfinder/internal/fault"
)

// Postgres stores no NUL character in text or JSON: a request carrying one
// in any string would fail as an internal error wherever it reaches the
// database. Requests are refused at the door instead, INVALID_ARGUMENT
// naming the field, before any handler sees them.

// maxNULViolations bounds the violations reported for one request.
const maxNULViolations = 10

// checkNUL returns an invalid-argument error naming every string field of
// m (nested messages, lists, map keys and values, Struct values included)
// that holds a NUL character; nil when none does.
func checkNUL(m proto.Message) error {
	if m == nil {
		return nil
	}
	var v fault.Violations
	n := 0
	walkStrings(m.ProtoReflect(), "", func(path string) {
		if n < maxNULViolations {
			v.Add(path, "must not contain a NUL character")
		}
		n++
	})
	return v.Err()
}

// walkStrings calls bad with the path of every string in m that holds a
// NUL character.
func walkStrings(m protoreflect.Message, prefix string, bad func(path string)) {
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		path := string(fd.Name())
		if prefix != "" {
			path = prefix + "." + path
		}
		switch {
		case fd.IsList():
			l := val.List()
			for i := range l.Len() {
				checkValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", path, i), bad)
			}
		case fd.IsMap():
			val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if strings.ContainsRune(key, 0) {
					bad(path)
				}
				checkValue(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", path, key), bad)
				return true
			})
		default:
			checkValue(fd, val, path, bad)
		}
		return true
	})
}

func checkValue(fd protoreflect.FieldDescriptor, val protoreflect.Value, path string, bad func(string)) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if strings.ContainsRune(val.String(), 0) {
			bad(path)
		}
	case protoreflect.BytesKind:
		// Bytes are bytes (media, sealed values): NUL is fine.
	case protoreflect.MessageKind, protoreflect.GroupKind:
		walkStrings(val.Message(), path, bad)
	}
}

// UnaryNoNUL refuses a unary request with a NUL character in any string
// field (see checkNUL).
func UnaryNoNUL() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if m, ok := req.(proto.Message); ok {
			if err := checkNUL(m); err != nil {
				return nil, err
			}
		}
		return handler(ctx, req)
	}
}

// StreamNoNUL refuses every message a stream receives with a NUL character
// in any string field.
func StreamNoNUL() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, nulCheckedStream{ss})
	}
}

type nulCheckedStream struct{ grpc.ServerStream }

func (s nulCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		return checkNUL(pm)
	}
	return nil
}
