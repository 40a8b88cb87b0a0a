package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"text/template"

	"golang.org/x/net/http/httpguts"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/llm/steps"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// Limits of the agent-engine parameters.
const (
	maxModelNameLen     = 200
	maxPromptLen        = 50000
	maxOutputTokens     = 200000
	maxTools            = 32
	maxJudgeEveryN      = 100
	maxStagnation       = 20
	maxActionsPerTurn   = 5
	maxWebhookHeaders   = 32
	maxHeaderValueBytes = 8192
)

// validateEngine checks the controller, judge, custom tools, prompt runner
// and budgets of p.
func validateEngine(v *fault.Violations, p *wfv1.RunParams) {
	validateModel(v, "params.controller", p.Controller, true)
	if j := p.Judge; j != nil {
		if _, ok := wfv1.JudgeStrategy_name[int32(j.Strategy)]; !ok {
			v.Add("params.judge.strategy", "unknown strategy %d", j.Strategy)
		}
		if f := j.Frequency; f != nil {
			switch f.Frequency.(type) {
			case *wfv1.JudgeFrequency_EveryNSteps:
				if n := f.GetEveryNSteps(); n < 1 || n > maxJudgeEveryN {
					v.Add("params.judge.frequency.every_n_steps", "must be between 1 and %d (got %d)", maxJudgeEveryN, n)
				}
			case *wfv1.JudgeFrequency_OnStagnation:
				if n := f.GetOnStagnation(); n < 1 || n > maxStagnation {
					v.Add("params.judge.frequency.on_stagnation", "must be between 1 and %d (got %d)", maxStagnation, n)
				}
			}
		}
		validateModel(v, "params.judge.model", j.Model, false)
	}
	validateTools(v, p.Tools)
	if pr := p.PromptRunner; pr != nil {
		validateWebhookURL(v, "params.prompt_runner.url", pr.Url)
		validateHeaders(v, "params.prompt_runner.headers", pr.Headers)
	}
	switch {
	case p.MaxCostUsd < 0 || math.IsNaN(p.MaxCostUsd) || math.IsInf(p.MaxCostUsd, 0):
		v.Add("params.max_cost_usd", "must be zero (no limit) or a positive amount")
	case p.MaxTokens < 0:
		v.Add("params.max_tokens", "must be zero (no limit) or positive")
	}
	if c := p.MinConfidence; c != nil && (*c < 0 || *c > 1 || math.IsNaN(*c)) {
		v.Add("params.min_confidence", "must be between 0 and 1 (got %g)", *c)
	}
	if n := p.ActionsPerTurn; n < 0 || n > maxActionsPerTurn {
		v.Add("params.actions_per_turn", "must be between 1 and %d (got %d)", maxActionsPerTurn, n)
	}
}

func validateModel(v *fault.Violations, field string, m *wfv1.ModelSettings, controller bool) {
	if m == nil {
		return
	}
	if len(m.Model) > maxModelNameLen || strings.ContainsAny(m.Model, "\r\n") {
		v.Add(field+".model", "at most %d characters on one line", maxModelNameLen)
	}
	if m.BaseUrl != "" {
		u, err := url.Parse(m.BaseUrl)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			v.Add(field+".base_url", "must be an absolute http(s) URL without credentials")
		}
	}
	if t := m.Temperature; t != nil && (*t < 0 || *t > 2 || math.IsNaN(*t)) {
		v.Add(field+".temperature", "must be between 0 and 2 (got %g)", *t)
	}
	if n := m.MaxOutputTokens; n < 0 || n > maxOutputTokens {
		v.Add(field+".max_output_tokens", "must be between 1 and %d, or 0 for the provider's default (got %d)", maxOutputTokens, n)
	}
	switch pr := m.Prompt.(type) {
	case *wfv1.ModelSettings_PromptText:
		switch {
		case len(pr.PromptText) > maxPromptLen:
			v.Add(field+".prompt_text", "at most %d characters", maxPromptLen)
		case controller:
			if _, err := template.New("controller").Option("missingkey=error").Parse(pr.PromptText); err != nil {
				v.Add(field+".prompt_text", "not a valid template: %v", err)
			}
		}
	case *wfv1.ModelSettings_PromptRef:
		validatePromptRef(v, field+".prompt_ref", pr.PromptRef)
	}
	if m.ApiKeyCredential != "" && !credentialNamePattern.MatchString(m.ApiKeyCredential) {
		v.Add(field+".api_key_credential", "must be a credential name (%s)", credentialNamePattern)
	}
}

func validateTools(v *fault.Violations, defs []*wfv1.ToolDefinition) {
	if len(defs) > maxTools {
		v.Add("params.tools", "at most %d tools", maxTools)
		return
	}
	seen := map[string]bool{}
	for i, t := range defs {
		field := fmt.Sprintf("params.tools[%d]", i)
		// The name the model will see: a catalog reference or an MCP tool
		// without a name of its own keeps the one it refers to.
		name := t.Name
		switch impl := t.Implementation.(type) {
		case *wfv1.ToolDefinition_Webhook:
		case *wfv1.ToolDefinition_CatalogRef:
			name = cmp.Or(name, impl.CatalogRef)
		case *wfv1.ToolDefinition_Mcp:
			name = cmp.Or(name, impl.Mcp.GetToolName())
		default:
			v.Add(field+".webhook", "a tool needs an implementation (webhook, catalog_ref or mcp)")
			continue
		}
		if name != "" && seen[name] {
			v.Add(field+".name", "duplicate tool name %q", name)
		}
		seen[name] = true
		switch t.Implementation.(type) {
		case *wfv1.ToolDefinition_CatalogRef:
			validateCatalogTool(v, field, t)
			continue
		case *wfv1.ToolDefinition_Mcp:
			validateMcpTool(v, field, t)
			continue
		}
		d, err := worker.ToolDefinitions([]*wfv1.ToolDefinition{t})
		if err != nil {
			v.Add(field, "%v", err)
			continue
		}
		for _, p := range tools.Validate(d[0], runner.Reserved) {
			v.Add(field+"."+p.Field, "%s", p.Message)
		}
	}
}

func validateWebhookURL(v *fault.Violations, field, raw string) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		v.Add(field, "must be an absolute http(s) URL without credentials")
	}
}

func validateHeaders(v *fault.Violations, field string, h map[string]string) {
	if len(h) > maxWebhookHeaders {
		v.Add(field, "at most %d headers", maxWebhookHeaders)
		return
	}
	for k, val := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			v.Add(field, "%q is not a valid header name", k)
		}
		if !httpguts.ValidHeaderFieldValue(val) || len(val) > maxHeaderValueBytes {
			// The value may be a secret: never echo it.
			v.Add(field, "the value of header %q is not a valid header value", k)
		}
	}
}

// checkModels builds the run's models the way a worker will, so a run that
// names an unknown provider, a provider without a key, or an offline goal
// that does not parse is refused at once instead of failing later.
func checkModels(m *worker.Models, p *wfv1.RunParams) error {
	if m == nil {
		return nil
	}
	var v fault.Violations
	// Stored keys are checked by checkModelCredentials; here any key will do.
	keys := map[string]string{}
	for _, n := range worker.CredentialNames(p) {
		keys[n] = "checked-separately"
	}
	m = m.WithRunKeys(keys)
	if _, err := m.Controller(p); err != nil {
		var pe *steps.ParseError
		if errors.As(err, &pe) {
			v.Add("params.goal", "the offline step controller cannot read the goal: %v", pe)
		} else {
			v.Add("params.controller.provider", "%v", err)
		}
	}
	if _, err := m.Judge(p); err != nil {
		v.Add("params.judge.model.provider", "%v", err)
	}
	return v.Err()
}

// checkCredentials checks that the stored credentials a run names exist in
// the caller's tenant: those of its models (which must hold an api_key
// field) and those of its auth bindings and login scripts. A credential
// deleted after CreateRun ends the run authentication_error when it starts.
func checkCredentials(ctx context.Context, st *store.Store, p *wfv1.RunParams) error {
	type ref struct{ field, name, needs string }
	refs := []ref{
		{"params.controller.api_key_credential", p.GetController().GetApiKeyCredential(), "api_key"},
		{"params.judge.model.api_key_credential", p.GetJudge().GetModel().GetApiKeyCredential(), "api_key"},
		{"params.auth.global_callback.script.credential", p.GetAuth().GetGlobalCallback().GetScript().GetCredential(), ""},
	}
	for i, b := range p.GetAuth().GetBindings() {
		refs = append(refs,
			ref{fmt.Sprintf("params.auth.bindings[%d].credential", i), b.GetCredential(), ""},
			ref{fmt.Sprintf("params.auth.bindings[%d].custom_callback.script.credential", i), b.GetCustomCallback().GetScript().GetCredential(), ""})
	}
	var v fault.Violations
	for _, r := range refs {
		if r.name == "" {
			continue
		}
		c, err := st.GetCredential(ctx, tenant.ID(ctx), r.name)
		switch {
		case errors.Is(err, fault.ErrNotFound):
			v.Add(r.field, "no credential named %q", r.name)
		case err != nil:
			return err
		case r.needs != "" && !slices.Contains(c.Fields, r.needs):
			v.Add(r.field, "credential %q has no %s field (use an API_KEY credential)", r.name, r.needs)
		}
	}
	return v.Err()
}
