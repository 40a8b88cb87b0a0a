package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// maxPromptDescriptionLen bounds a library prompt's description.
const maxPromptDescriptionLen = 1000

// validatePromptRef checks a prompt library reference ("name" or
// "name@version") of a run's model settings.
func validatePromptRef(v *fault.Violations, field, ref string) {
	if _, _, err := worker.ParsePromptRef(ref); err != nil {
		v.Add(field, "%q is not a prompt reference (name or name@version): %s", ref,
			strings.TrimPrefix(err.Error(), fault.ErrInvalidArgument.Error()+": "))
	}
}

// validatePromptName checks the name of a library prompt.
func validatePromptName(v *fault.Violations, field, name string) {
	if _, version, err := worker.ParsePromptRef(name); err != nil || version != 0 || strings.Contains(name, "@") {
		v.Add(field, "must match [a-z0-9][a-z0-9_.-]{0,63}")
	}
}

// samplePromptData stands in for a run's values when a controller
// template is tried at CreatePrompt.
var samplePromptData = runner.PromptData{Goal: "Find the opening hours", MinConfidence: 0.6, ActionsPerTurn: 1,
	Tools: "lookup_order", Guidance: "A login is available."}

// validatePrompt checks a prompt to store: its name, role, template
// (executed against sample data for a controller prompt, so unknown
// fields fail now rather than when a run starts), description and default
// model settings.
func validatePrompt(v *fault.Violations, p *wfv1.Prompt) {
	if p == nil {
		v.Add("prompt", "required")
		return
	}
	validatePromptName(v, "prompt.name", p.GetName())
	text := p.GetTemplate()
	switch {
	case strings.TrimSpace(text) == "":
		v.Add("prompt.template", "required")
	case len(text) > maxPromptLen:
		v.Add("prompt.template", "at most %d characters", maxPromptLen)
	}
	switch p.GetRole() {
	case wfv1.PromptRole_PROMPT_ROLE_CONTROLLER:
		if text != "" {
			validateControllerTemplate(v, "prompt.template", text)
		}
	case wfv1.PromptRole_PROMPT_ROLE_JUDGE:
		if strings.Contains(text, "{{") {
			v.Add("prompt.template", "a judge prompt is sent as written and has no variables (the judge adds the goal, steps, claim and page itself); remove {{ … }}")
		}
	default:
		v.Add("prompt.role", "PROMPT_ROLE_CONTROLLER or PROMPT_ROLE_JUDGE")
	}
	if len(p.GetDescription()) > maxPromptDescriptionLen {
		v.Add("prompt.description", "at most %d characters", maxPromptDescriptionLen)
	}
	if d := p.GetDefaults(); d != nil {
		if d.Prompt != nil {
			v.Add("prompt.defaults", "default model settings hold no prompt (prompt_text, prompt_ref): the prompt is the template")
		}
		validateModel(v, "prompt.defaults", d, false)
	}
}

// validateControllerTemplate parses text as the runner does and executes
// it against sample data.
func validateControllerTemplate(v *fault.Violations, field, text string) {
	tmpl, err := template.New("controller").Option("missingkey=error").Parse(text)
	if err != nil {
		v.Add(field, "not a valid template: %v", err)
		return
	}
	if err := tmpl.Execute(&strings.Builder{}, samplePromptData); err != nil {
		v.Add(field, "the template fails with the runner's variables (.Goal, .Tools, .Guidance, .MinConfidence, .ActionsPerTurn): %v", err)
	}
}

// checkPrompts checks that the prompt library references of a run's
// controller and judge name prompts of the caller's tenant with the
// right role. A "name" resolves when the run starts; a prompt deleted
// before then ends the run ERROR.
func checkPrompts(ctx context.Context, st *store.Store, p *wfv1.RunParams) error {
	refs := []struct {
		field, ref string
		role       wfv1.PromptRole
	}{
		{"params.controller.prompt_ref", p.GetController().GetPromptRef(), wfv1.PromptRole_PROMPT_ROLE_CONTROLLER},
		{"params.judge.model.prompt_ref", p.GetJudge().GetModel().GetPromptRef(), wfv1.PromptRole_PROMPT_ROLE_JUDGE},
	}
	var v fault.Violations
	for _, r := range refs {
		if r.ref == "" {
			continue
		}
		name, version, err := worker.ParsePromptRef(r.ref)
		if err != nil {
			return fmt.Errorf("%s: %w", r.field, err) // validated before
		}
		got, err := st.GetPrompt(ctx, tenant.ID(ctx), name, version)
		switch {
		case errors.Is(err, fault.ErrNotFound):
			v.Add(r.field, "no prompt %q in the prompt library", r.ref)
		case err != nil:
			return err
		case got.GetRole() != r.role:
			v.Add(r.field, "prompt %q is a %s prompt; this needs a %s prompt", r.ref, got.GetRole(), r.role)
		}
	}
	return v.Err()
}
