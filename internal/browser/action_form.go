package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// formElement locates the element of a form action and reads its state; a
// <label> stands for the control it labels.
func (pg *Page) formElement(ctx context.Context, a Action, opts ActionOptions, out *outcome) (*element, elementState, error) {
	el, err := pg.locate(ctx, a.Ref, a.SnapshotID, a.Target, opts, out.res)
	if err != nil {
		return nil, elementState{}, err
	}
	st, err := el.state(ctx)
	if err != nil {
		return nil, st, err
	}
	if st.Kind == "label" {
		// The match may be the label's text node (a name-only target).
		obj, err := evalOn(ctx, el, `function() { const l = this.nodeType === 1 ? this : this.parentElement; return l && l.control; }`)
		if err != nil {
			return nil, st, err
		}
		if obj == "" {
			return nil, st, fail(CodeActionFailed, "%s labels no form control", el.desc)
		}
		el = &element{sess: el.sess, obj: obj}
		if st, err = el.state(ctx); err != nil {
			return nil, st, err
		}
		out.res.Element = el.desc
	}
	return el, st, nil
}

// evalOn calls fn on el with args and returns the object it returns (""
// for null).
func evalOn(ctx context.Context, el *element, fn string, args ...any) (proto.RuntimeRemoteObjectID, error) {
	r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: fn, ObjectID: el.obj, Arguments: callArgs(args)}.Call(el.sess.Context(ctx))
	if err != nil {
		return "", classify(err)
	}
	if r.ExceptionDetails != nil {
		return "", fmt.Errorf("page script failed: %s", exceptionText(r.ExceptionDetails))
	}
	return r.Result.ObjectID, nil
}

// doFill replaces a text field's content with a.Value: it selects the
// content and inserts the text as one input (an empty value deletes it).
func (pg *Page) doFill(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	el, st, err := pg.formElement(ctx, a, opts, out)
	if err != nil {
		return err
	}
	if err := el.checkVisible(st); err != nil {
		return err
	}
	switch {
	case st.Disabled:
		return fail(CodeElementDisabled, "%s is disabled", el.desc)
	case st.Readonly:
		return fail(CodeElementDisabled, "%s is read-only", el.desc)
	case st.Kind == "select":
		return fail(CodeInvalidParams, "%s is a drop-down: use select", el.desc)
	case st.Kind == "checkbox" || st.Kind == "radio":
		return fail(CodeInvalidParams, "%s is a %s: use check or uncheck", el.desc, st.Kind)
	case st.Kind == "file":
		return fail(CodeInvalidParams, "%s is a file input: use upload", el.desc)
	case st.Kind != "text" && st.Kind != "editable" && st.Kind != "value":
		return fail(CodeActionFailed, "%s is not a text field", el.desc)
	}
	_ = proto.DOMScrollIntoViewIfNeeded{ObjectID: el.obj}.Call(el.sess.Context(ctx))
	out.acted = true
	var r struct {
		Done  bool   `json:"done"`
		Error string `json:"error"`
	}
	if err := el.call(ctx, jsFill, &r, a.Value, st.Kind); err != nil {
		return err
	}
	if r.Error != "" {
		return fail(CodeActionFailed, "%s: %s", el.desc, r.Error)
	}
	if !r.Done {
		if a.Value == "" {
			err = pg.pressChord(ctx, chord{key: namedKeys["delete"]})
		} else {
			err = proto.InputInsertText{Text: a.Value}.Call(pg.p.Context(ctx))
		}
		if err != nil {
			return classify(fmt.Errorf("enter text: %w", err))
		}
	}
	if err := pg.readValue(ctx, el, out.res); err != nil {
		return err
	}
	if st.Kind != "editable" && out.res.Value != a.Value {
		out.res.Note = fmt.Sprintf("the page changed the value to %q", out.res.Value)
	}
	return nil
}

// doSelect picks options in a native <select>, or in an ARIA combobox or
// listbox by opening it and clicking the option.
func (pg *Page) doSelect(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	el, st, err := pg.formElement(ctx, a, opts, out)
	if err != nil {
		return err
	}
	wanted := a.Values
	if len(wanted) == 0 {
		wanted = []string{a.Value}
	}
	if st.Disabled {
		return fail(CodeElementDisabled, "%s is disabled", el.desc)
	}
	if st.Kind != "select" {
		return pg.selectARIA(ctx, el, st, wanted, opts, out)
	}
	if err := el.checkVisible(st); err != nil {
		return err
	}
	out.acted = true
	var r struct {
		Missing     string   `json:"missing"`
		Options     []string `json:"options"`
		Disabled    string   `json:"disabled"`
		NotMultiple bool     `json:"notMultiple"`
		Value       string   `json:"value"`
	}
	if err := el.call(ctx, jsSelectNative, &r, wanted); err != nil {
		return err
	}
	switch {
	case r.Missing != "":
		return fail(CodeActionFailed, "%s has no option %q (options: %s)", el.desc, r.Missing, strings.Join(r.Options, ", "))
	case r.Disabled != "":
		return fail(CodeElementDisabled, "option %q of %s is disabled", r.Disabled, el.desc)
	case r.NotMultiple:
		return fail(CodeInvalidParams, "%s takes one option, not %d", el.desc, len(wanted))
	}
	out.res.Value = r.Value
	return nil
}

// selectARIA opens a combobox (unless el is the listbox itself), finds each
// wanted option in its listbox (typing into an editable combobox to filter
// when the option is not listed) and clicks it.
func (pg *Page) selectARIA(ctx context.Context, el *element, st elementState, wanted []string, opts ActionOptions, out *outcome) error {
	if st.Role != "listbox" && st.Role != "combobox" && !st.Editable {
		var popup bool
		_ = el.call(ctx, `function() { return this.hasAttribute('aria-haspopup') || this.hasAttribute('aria-controls'); }`, &popup)
		if !popup {
			return fail(CodeActionFailed, "%s is not a select, combobox or listbox", el.desc)
		}
	}
	for _, w := range wanted {
		opt, err := pg.findOption(ctx, el, st, w, opts, out)
		if err != nil {
			return err
		}
		pt, err := pg.actionPoint(ctx, opt, true)
		if err != nil {
			return err
		}
		out.acted = true
		if err := pg.click(ctx, pt, proto.InputMouseButtonLeft, 1); err != nil {
			return err
		}
	}
	return pg.readValue(ctx, el, out.res)
}

// findOption returns the option w of el's listbox, opening it first.
func (pg *Page) findOption(ctx context.Context, el *element, st elementState, w string, opts ActionOptions, out *outcome) (*element, error) {
	listbox := func(ctx context.Context) (*element, error) {
		obj, err := evalOn(ctx, el, jsListbox)
		if err != nil || obj == "" {
			return nil, err
		}
		return &element{sess: el.sess, obj: obj}, nil
	}
	lb, err := listbox(ctx)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		pt, err := pg.actionPoint(ctx, el, true)
		if err != nil {
			return nil, err
		}
		out.acted = true
		if err := pg.click(ctx, pt, proto.InputMouseButtonLeft, 1); err != nil {
			return nil, err
		}
		if lb, err = pollFind(ctx, opts.StrategyTimeout, listbox); err != nil || lb == nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fail(CodeActionFailed, "%s opened no listbox of options", el.desc)
		}
	}
	option := func(ctx context.Context) (*element, error) {
		if lb.obj == "" {
			return nil, nil
		}
		obj, err := evalOn(ctx, lb, jsOption, w)
		if err != nil || obj == "" {
			return nil, err
		}
		return &element{sess: lb.sess, obj: obj}, nil
	}
	opt, err := pollFind(ctx, opts.StrategyTimeout/3, option)
	if opt != nil || err != nil || ctx.Err() != nil {
		return opt, err
	}
	if st.Editable {
		// An autocomplete: type to make the option appear.
		var r struct{}
		if err := el.call(ctx, jsFill, &r, w, "text"); err != nil {
			return nil, err
		}
		if err := (proto.InputInsertText{Text: w}).Call(pg.p.Context(ctx)); err != nil {
			return nil, classify(err)
		}
		out.acted = true
		if l, _ := pollFind(ctx, opts.StrategyTimeout, listbox); l != nil {
			lb = l
		}
		if opt, err = pollFind(ctx, opts.StrategyTimeout, option); opt != nil || err != nil {
			return opt, err
		}
	}
	var labels []string
	_ = lb.call(ctx, jsOptionLabels, &labels)
	return nil, fail(CodeActionFailed, "%s has no option %q (options: %s)", el.desc, w, strings.Join(labels, ", "))
}

// doCheck checks or unchecks a checkbox, radio button or switch by clicking
// it (or its label, when the control itself is hidden behind a styled one)
// and verifies the new state.
func (pg *Page) doCheck(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	el, st, err := pg.formElement(ctx, a, opts, out)
	if err != nil {
		return err
	}
	want := a.Kind == ActionCheck
	if st.Checked == nil {
		return fail(CodeActionFailed, "%s is not a checkbox, radio button or switch", el.desc)
	}
	if st.Kind == "radio" && !want {
		return fail(CodeInvalidParams, "%s is a radio button, which cannot be unchecked; check another option of its group", el.desc)
	}
	out.res.Checked = &want
	if *st.Checked == want {
		out.res.Note = fmt.Sprintf("%s was already %s", el.desc, map[bool]string{true: "checked", false: "unchecked"}[want])
		return nil
	}
	if st.Disabled {
		return fail(CodeElementDisabled, "%s is disabled", el.desc)
	}
	target := el
	if st.Hidden != "" && st.LabelVisible {
		obj, err := evalOn(ctx, el, jsFn(`function() { return [...this.labels].find(visible); }`))
		if err != nil {
			return err
		}
		target = &element{sess: el.sess, obj: obj, desc: el.desc}
	}
	pt, err := pg.actionPoint(ctx, target, true)
	if err != nil {
		return err
	}
	out.acted = true
	if err := pg.click(ctx, pt, proto.InputMouseButtonLeft, 1); err != nil {
		return err
	}
	// The page may update the state asynchronously (a framework re-render).
	changed := func(ctx context.Context) (*element, error) {
		s, err := el.state(ctx)
		if err != nil {
			return nil, err
		}
		if s.Checked != nil && *s.Checked == want {
			return el, nil
		}
		return nil, nil
	}
	if ok, err := pollFind(ctx, time.Second, changed); ok == nil {
		if err != nil {
			return err
		}
		return fail(CodeActionFailed, "clicking %s did not %s it", el.desc, a.Kind)
	}
	return nil
}

// doUpload sets files the run was given on a file input, or on the file
// chooser that clicking the element opens.
func (pg *Page) doUpload(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	files, err := uploadFiles(a.Files, opts.UploadFiles)
	if err != nil {
		return err
	}
	el, st, err := pg.formElement(ctx, a, opts, out)
	if err != nil {
		return err
	}
	if st.Disabled {
		return fail(CodeElementDisabled, "%s is disabled", el.desc)
	}
	input := el
	if st.Kind != "file" {
		if input, err = pg.chooseFile(ctx, el, opts, out); err != nil {
			return err
		}
		if st, err = input.state(ctx); err != nil {
			return err
		}
	}
	if !st.Multiple && len(files) > 1 {
		return fail(CodeInvalidParams, "%s takes one file, not %d", input.desc, len(files))
	}
	out.acted = true
	if err := (proto.DOMSetFileInputFiles{Files: files, ObjectID: input.obj}).Call(input.sess.Context(ctx)); err != nil {
		return classify(fmt.Errorf("set files: %w", err))
	}
	return input.call(ctx, `function() { return [...this.files].map(f => f.name).join(', '); }`, &out.res.Value)
}

// chooseFile clicks el and returns the file input whose chooser it opened.
func (pg *Page) chooseFile(ctx context.Context, el *element, opts ActionOptions, out *outcome) (*element, error) {
	sess := pg.p.Context(ctx)
	if err := (proto.PageSetInterceptFileChooserDialog{Enabled: true}).Call(sess); err != nil {
		return nil, classify(fmt.Errorf("intercept file chooser: %w", err))
	}
	defer func() {
		_ = proto.PageSetInterceptFileChooserDialog{Enabled: false}.Call(pg.p.Context(context.WithoutCancel(ctx)))
	}()
	ch := make(chan proto.PageFileChooserOpened, 1)
	pg.tab.mu.Lock()
	pg.tab.fileChooser = ch
	pg.tab.mu.Unlock()
	defer func() {
		pg.tab.mu.Lock()
		pg.tab.fileChooser = nil
		pg.tab.mu.Unlock()
	}()
	pt, err := pg.actionPoint(ctx, el, true)
	if err != nil {
		return nil, err
	}
	out.acted = true
	if err := pg.click(ctx, pt, proto.InputMouseButtonLeft, 1); err != nil {
		return nil, err
	}
	wait := time.NewTimer(opts.StrategyTimeout)
	defer wait.Stop()
	select {
	case ev := <-ch:
		rn, err := proto.DOMResolveNode{BackendNodeID: ev.BackendNodeID}.Call(sess)
		if err != nil {
			return nil, fmt.Errorf("resolve file input: %w", err)
		}
		in := &element{sess: pg.p, obj: rn.Object.ObjectID}
		_ = in.call(ctx, jsDescribe, &in.desc)
		return in, nil
	case <-wait.C:
		return nil, fail(CodeActionFailed, "%s is not a file input and clicking it opened no file chooser", el.desc)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// uploadFiles maps the requested files (paths or base names) to the
// allowed ones.
func uploadFiles(requested, allowed []string) ([]string, error) {
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = filepath.Base(f)
	}
	out := make([]string, 0, len(requested))
	for _, r := range requested {
		found := ""
		for _, f := range allowed {
			if filepath.Clean(r) == filepath.Clean(f) || r == filepath.Base(f) {
				found = f
				break
			}
		}
		if found == "" {
			if len(allowed) == 0 {
				return nil, fail(CodeInvalidParams, "file %q is not available: this run was given no files to upload", r)
			}
			return nil, fail(CodeInvalidParams, "file %q is not available to this run (available: %s)", r, strings.Join(names, ", "))
		}
		if _, err := os.Stat(found); err != nil {
			return nil, fail(CodeActionFailed, "file %q cannot be read: %v", filepath.Base(found), err)
		}
		out = append(out, found)
	}
	return out, nil
}
