package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/wayfinder/wayfinder/internal/runner"
)

// The worker redacts what it stores and logs with the engine's Redactor
// (runner.NewRedactor): the engine already redacts everything it reports,
// so this is the second line, which also covers what the worker records on
// its own (blocked requests, model errors, log lines).

// redactProto redacts every string field of m in place, at any depth
// (structpb values included), and map keys. Bytes fields (images) are left
// as they are.
func redactProto(r *runner.Redactor, m proto.Message) {
	if !r.Active() || m == nil || !m.ProtoReflect().IsValid() {
		return
	}
	redactMessage(r, m.ProtoReflect())
}

func redactMessage(r *runner.Redactor, m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				switch fd.Kind() {
				case protoreflect.StringKind:
					l.Set(i, protoreflect.ValueOfString(r.String(l.Get(i).String())))
				case protoreflect.MessageKind, protoreflect.GroupKind:
					redactMessage(r, l.Get(i).Message())
				}
			}
		case fd.IsMap():
			redactMap(r, fd, v.Map())
		case fd.Kind() == protoreflect.StringKind:
			if s := v.String(); r.String(s) != s {
				m.Set(fd, protoreflect.ValueOfString(r.String(s)))
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			redactMessage(r, v.Message())
		}
		return true
	})
}

func redactMap(r *runner.Redactor, fd protoreflect.FieldDescriptor, mp protoreflect.Map) {
	type entry struct {
		k protoreflect.MapKey
		v protoreflect.Value
	}
	var moved []entry
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		switch fd.MapValue().Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString(r.String(v.String()))
			mp.Set(k, v)
		case protoreflect.MessageKind, protoreflect.GroupKind:
			redactMessage(r, v.Message())
		}
		if fd.MapKey().Kind() == protoreflect.StringKind {
			if nk := r.String(k.String()); nk != k.String() {
				moved = append(moved, entry{k, v})
			}
		}
		return true
	})
	for _, e := range moved {
		mp.Clear(e.k)
		mp.Set(protoreflect.ValueOfString(r.String(e.k.String())).MapKey(), e.v)
	}
}

// redactingHandler is a slog.Handler that redacts the message and every
// attribute's text before passing a record on.
type redactingHandler struct {
	h slog.Handler
	r *runner.Redactor
	// later, when set, holds the redactor instead of r: the run's logger
	// exists before the run's secrets are known (lateRedactingLogger).
	later *atomic.Pointer[runner.Redactor]
	// pending are attributes added with With to a late handler, added to
	// each record so that they are redacted with it.
	pending []slog.Attr
}

// lateRedactingLogger returns log with its records redacted by the
// redactor stored in ref once there is one (until then they pass as they
// are: nothing secret is known yet).
func lateRedactingLogger(log *slog.Logger, ref *atomic.Pointer[runner.Redactor]) *slog.Logger {
	return slog.New(&redactingHandler{h: log.Handler(), later: ref})
}

// redactor is the handler's current redactor (nil: none yet).
func (h *redactingHandler) redactor() *runner.Redactor {
	if h.later != nil {
		return h.later.Load()
	}
	return h.r
}

// redactLogger returns log with its records redacted by r (log itself when
// r redacts nothing).
func redactLogger(log *slog.Logger, r *runner.Redactor) *slog.Logger {
	if !r.Active() || log == nil {
		return log
	}
	if _, ok := log.Handler().(*redactingHandler); ok {
		return log
	}
	return slog.New(&redactingHandler{h: log.Handler(), r: r})
}

func (h *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.h.Enabled(ctx, l)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	r := h.redactor()
	if r == nil {
		if len(h.pending) > 0 {
			rec = rec.Clone()
			rec.AddAttrs(h.pending...)
		}
		return h.h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, r.String(rec.Message), rec.PC)
	for _, a := range h.pending {
		out.AddAttrs(attr(r, a))
	}
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(r, a))
		return true
	})
	return h.h.Handle(ctx, out)
}

// WithAttrs redacts attributes added to the logger when they are added;
// a late redactor does not know its values yet, so those attributes are
// kept with the handler and redacted with each record.
func (h *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.later != nil {
		return &redactingHandler{h: h.h, later: h.later, pending: append(slices.Clip(h.pending), as...)}
	}
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = attr(h.r, a)
	}
	return &redactingHandler{h: h.h.WithAttrs(red), r: h.r}
}

// WithGroup starts a group; with a late redactor, attributes added before
// it are written inside it (the worker's run loggers use no groups).
func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: h.h.WithGroup(name), r: h.r, later: h.later, pending: h.pending}
}

// attr redacts a's value: strings, errors, Stringers and other values by
// their text, groups member by member.
func attr(r *runner.Redactor, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, m := range g {
			red[i] = attr(r, m)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			s = fmt.Sprint(x)
		}
		if rs := r.String(s); rs != s {
			return slog.String(a.Key, rs)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
