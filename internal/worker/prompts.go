package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// promptNamePattern is the syntax of a prompt library name.
var promptNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// ParsePromptRef splits a prompt library reference, "name" (the latest
// version) or "name@version" (version ≥ 1), into its name and version (0
// for the latest). A malformed reference is an error wrapping
// fault.ErrInvalidArgument that says what is wrong.
func ParsePromptRef(ref string) (name string, version int32, err error) {
	name, ver, pinned := strings.Cut(ref, "@")
	if !promptNamePattern.MatchString(name) {
		return "", 0, fmt.Errorf("%w: the prompt name must match %s", fault.ErrInvalidArgument, promptNamePattern)
	}
	if !pinned {
		return name, 0, nil
	}
	n, err := strconv.ParseInt(ver, 10, 32)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != ver {
		return "", 0, fmt.Errorf("%w: the version after @ must be a number from 1 (name@3), or leave it out for the latest", fault.ErrInvalidArgument)
	}
	return name, int32(n), nil
}

// Prompt roles as runs pin them (store.PinRunPrompts) and the runner
// records them.
const (
	pinController = "controller"
	pinJudge      = "judge"
)

// promptSlot is a run's model settings that may reference the library.
type promptSlot struct {
	pin  string
	role wfv1.PromptRole
	m    *wfv1.ModelSettings
}

func promptSlots(p *wfv1.RunParams) []promptSlot {
	return []promptSlot{
		{pinController, wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, p.GetController()},
		{pinJudge, wfv1.PromptRole_PROMPT_ROLE_JUDGE, p.GetJudge().GetModel()},
	}
}

// resolvePrompts replaces the prompt library references of run's model
// settings (prompt_ref) by the prompts they name, before the run's engine
// parameters are built: the template becomes prompt_text, and the
// prompt's default model settings fill what the run left unset. A "name"
// resolves to its latest version when the run first starts; that version
// is pinned on the run (store.PinRunPrompts) so a resumed run uses the
// same one. It returns the pinned versions ("name@version") of the
// controller's and the judge's prompts, "" for none, which every model
// call records. A prompt deleted or changed role since CreateRun is an
// error.
func (w *Worker) resolvePrompts(ctx context.Context, run *wfv1.Run) (controller, judge string, err error) {
	slots := promptSlots(run.GetParams())
	latest := map[string]string{}
	loaded := map[string]*wfv1.Prompt{}
	for _, s := range slots {
		ref := s.m.GetPromptRef()
		if ref == "" {
			continue
		}
		p, err := w.loadPrompt(ctx, run.GetTenantId(), ref)
		if err != nil {
			return "", "", err
		}
		pinned := p.GetName() + "@" + strconv.Itoa(int(p.GetVersion()))
		latest[s.pin], loaded[pinned] = pinned, p
	}
	if len(latest) == 0 {
		return "", "", nil
	}
	pins, err := w.cfg.Store.PinRunPrompts(ctx, run.GetId(), latest)
	if err != nil {
		return "", "", fmt.Errorf("pin the run's prompts: %w", err)
	}
	for _, s := range slots {
		if s.m.GetPromptRef() == "" {
			continue
		}
		pinned := pins[s.pin]
		p := loaded[pinned]
		if p == nil { // pinned by an earlier attempt of the run
			if p, err = w.loadPrompt(ctx, run.GetTenantId(), pinned); err != nil {
				return "", "", err
			}
		}
		if p.GetRole() != s.role {
			return "", "", fmt.Errorf("prompt %s is a %s prompt, not a %s prompt", pinned, roleName(p.GetRole()), roleName(s.role))
		}
		applyPrompt(s.m, p)
	}
	return pins[pinController], pins[pinJudge], nil
}

// loadPrompt returns the tenant's prompt a reference names.
func (w *Worker) loadPrompt(ctx context.Context, tenant, ref string) (*wfv1.Prompt, error) {
	name, version, err := ParsePromptRef(ref)
	if err != nil {
		return nil, fmt.Errorf("prompt reference %q: %w", ref, err)
	}
	p, err := w.cfg.Store.GetPrompt(ctx, tenant, name, version)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("prompt %q no longer exists in the prompt library", ref)
	}
	if err != nil {
		return nil, fmt.Errorf("load prompt %q: %w", ref, err)
	}
	return p, nil
}

// applyPrompt makes m use p's template, and p's default model settings
// where m leaves them unset. The endpoint settings (provider, model,
// base_url, api_key_credential) belong together: they apply only when m
// sets none of them.
func applyPrompt(m *wfv1.ModelSettings, p *wfv1.Prompt) {
	m.Prompt = &wfv1.ModelSettings_PromptText{PromptText: p.GetTemplate()}
	d := p.GetDefaults()
	if d == nil {
		return
	}
	if m.Provider == "" && m.Model == "" && m.BaseUrl == "" && m.ApiKeyCredential == "" {
		m.Provider, m.Model, m.BaseUrl, m.ApiKeyCredential = d.Provider, d.Model, d.BaseUrl, d.ApiKeyCredential
	}
	if m.Temperature == nil && d.Temperature != nil {
		m.Temperature = proto.Float64(d.GetTemperature())
	}
	if m.MaxOutputTokens == 0 {
		m.MaxOutputTokens = d.MaxOutputTokens
	}
}

func roleName(r wfv1.PromptRole) string {
	switch r {
	case wfv1.PromptRole_PROMPT_ROLE_CONTROLLER:
		return "controller"
	case wfv1.PromptRole_PROMPT_ROLE_JUDGE:
		return "judge"
	}
	return "unknown"
}
