package api

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// nopQueue accepts every run without running it.
type nopQueue struct{}

func (nopQueue) EnqueueRunTx(context.Context, pgx.Tx, string, time.Duration) (int64, error) {
	return 1, nil
}
func (nopQueue) CancelJobTx(context.Context, pgx.Tx, int64) error { return nil }

type promptBundle struct {
	st      *store.Store
	prompts *PromptService
	runs    *RunService
}

func setupPrompts(t *testing.T) promptBundle {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	_, err := st.CreateTenant(t.Context(), &wfv1.Tenant{Id: "acme"})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	return promptBundle{
		st:      st,
		prompts: NewPromptService(st, log),
		runs:    NewRunService(Config{Store: st, Queue: nopQueue{}, MaxRunTimeout: testMaxRunTimeout, Logger: log}),
	}
}

func newControllerPrompt(name, text string) *wfv1.CreatePromptRequest {
	return &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{Name: name, Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, Template: text}}
}

func TestPromptServiceCRUD(t *testing.T) {
	t.Parallel()
	b := setupPrompts(t)
	ctx := asTenant("acme")

	p1, err := b.prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{
		Name: "checkout", Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, Template: "Goal: {{.Goal}}", Description: "shop",
		Version: 9, CreatedBy: "forged", Defaults: &wfv1.ModelSettings{Model: "gpt-4.1", Temperature: proto.Float64(0)},
	}})
	require.NoError(t, err)
	require.EqualValues(t, 1, p1.Version, "versions are numbered by the server")
	require.Equal(t, "key:key-acme", p1.CreatedBy)
	p2, err := b.prompts.CreatePrompt(ctx, newControllerPrompt("checkout", "Goal now: {{.Goal}}"))
	require.NoError(t, err)
	require.EqualValues(t, 2, p2.Version)

	got, err := b.prompts.GetPrompt(ctx, &wfv1.GetPromptRequest{Name: "checkout"})
	require.NoError(t, err)
	require.EqualValues(t, 2, got.Version)
	got, err = b.prompts.GetPrompt(ctx, &wfv1.GetPromptRequest{Name: "checkout", Version: 1})
	require.NoError(t, err)
	require.Equal(t, "Goal: {{.Goal}}", got.Template)
	require.Equal(t, "gpt-4.1", got.Defaults.GetModel())

	list, err := b.prompts.ListPrompts(ctx, &wfv1.ListPromptsRequest{})
	require.NoError(t, err)
	require.Len(t, list.Prompts, 1)
	require.EqualValues(t, 2, list.Prompts[0].Version)
	versions, err := b.prompts.ListPromptVersions(ctx, &wfv1.ListPromptVersionsRequest{Name: "checkout"})
	require.NoError(t, err)
	require.Len(t, versions.Prompts, 2)

	_, err = b.prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{Name: "checkout", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "x"}})
	require.Equal(t, codes.FailedPrecondition, codeOf(err), "a name keeps its role: %v", err)

	_, err = b.prompts.DeletePrompt(ctx, &wfv1.DeletePromptRequest{Name: "checkout"})
	require.NoError(t, err)
	_, err = b.prompts.GetPrompt(ctx, &wfv1.GetPromptRequest{Name: "checkout"})
	require.Equal(t, codes.NotFound, codeOf(err))
}

func TestPromptServiceTenants(t *testing.T) {
	t.Parallel()
	b := setupPrompts(t)
	_, err := b.prompts.CreatePrompt(asTenant("acme"), newControllerPrompt("mine", "{{.Goal}}"))
	require.NoError(t, err)

	other := asTenant("default")
	_, err = b.prompts.GetPrompt(other, &wfv1.GetPromptRequest{Name: "mine"})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.prompts.ListPromptVersions(other, &wfv1.ListPromptVersionsRequest{Name: "mine"})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.prompts.DeletePrompt(other, &wfv1.DeletePromptRequest{Name: "mine"})
	require.Equal(t, codes.NotFound, codeOf(err))
	list, err := b.prompts.ListPrompts(other, &wfv1.ListPromptsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Prompts)
	// Nor can another tenant's run use it.
	_, err = b.runs.CreateRun(other, &wfv1.CreateRunRequest{Params: validParams(func(p *wfv1.RunParams) {
		p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "mine"}}
	})})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
}

func TestPromptServiceValidation(t *testing.T) {
	t.Parallel()
	b := setupPrompts(t)
	ctx := asTenant("acme")
	judge := wfv1.PromptRole_PROMPT_ROLE_JUDGE
	ctl := wfv1.PromptRole_PROMPT_ROLE_CONTROLLER
	long := string(make([]byte, maxPromptLen+1))
	for _, tc := range []struct {
		name  string
		p     *wfv1.Prompt
		field string
	}{
		{"no prompt", nil, "prompt"},
		{"empty name", &wfv1.Prompt{Role: ctl, Template: "x"}, "prompt.name"},
		{"upper case", &wfv1.Prompt{Name: "Checkout", Role: ctl, Template: "x"}, "prompt.name"},
		{"leading dash", &wfv1.Prompt{Name: "-x", Role: ctl, Template: "x"}, "prompt.name"},
		{"version in name", &wfv1.Prompt{Name: "x@2", Role: ctl, Template: "x"}, "prompt.name"},
		{"too long name", &wfv1.Prompt{Name: "a" + string(make([]byte, 64)), Role: ctl, Template: "x"}, "prompt.name"},
		{"no role", &wfv1.Prompt{Name: "x", Template: "x"}, "prompt.role"},
		{"no template", &wfv1.Prompt{Name: "x", Role: ctl, Template: "  "}, "prompt.template"},
		{"template too long", &wfv1.Prompt{Name: "x", Role: judge, Template: long}, "prompt.template"},
		{"template syntax", &wfv1.Prompt{Name: "x", Role: ctl, Template: "{{.Goal"}, "prompt.template"},
		{"unknown variable", &wfv1.Prompt{Name: "x", Role: ctl, Template: "{{.Page}}"}, "prompt.template"},
		{"judge with variables", &wfv1.Prompt{Name: "x", Role: judge, Template: "Judge {{.Goal}}"}, "prompt.template"},
		{"description too long", &wfv1.Prompt{Name: "x", Role: ctl, Template: "x", Description: string(make([]byte, 1001))}, "prompt.description"},
		{"defaults with a prompt", &wfv1.Prompt{Name: "x", Role: ctl, Template: "x",
			Defaults: &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptText{PromptText: "y"}}}, "prompt.defaults"},
		{"defaults temperature", &wfv1.Prompt{Name: "x", Role: ctl, Template: "x",
			Defaults: &wfv1.ModelSettings{Temperature: proto.Float64(3)}}, "prompt.defaults.temperature"},
		{"defaults credential", &wfv1.Prompt{Name: "x", Role: ctl, Template: "x",
			Defaults: &wfv1.ModelSettings{ApiKeyCredential: "Bad Name"}}, "prompt.defaults.api_key_credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: tc.p})
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			require.Equal(t, []string{tc.field}, violationFields(t, err))
		})
	}
	for _, ok := range []*wfv1.Prompt{
		{Name: "a.b_c-1", Role: ctl, Template: "{{.Goal}} {{.Tools}} {{.Guidance}} {{.MinConfidence}} {{.ActionsPerTurn}}"},
		{Name: "j", Role: judge, Template: "Be strict about prices.", Defaults: &wfv1.ModelSettings{Provider: "openai", MaxOutputTokens: 500}},
	} {
		_, err := b.prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: ok})
		require.NoError(t, err, ok.Name)
	}
	for _, req := range []*wfv1.GetPromptRequest{{Name: ""}, {Name: "x", Version: -1}} {
		_, err := b.prompts.GetPrompt(ctx, req)
		require.Equal(t, codes.InvalidArgument, codeOf(err), "%v", req)
	}
	_, err := b.prompts.ListPrompts(ctx, &wfv1.ListPromptsRequest{PageSize: 201})
	require.Equal(t, codes.InvalidArgument, codeOf(err))
}

func TestValidatePromptRef(t *testing.T) {
	t.Parallel()
	for ref, valid := range map[string]bool{
		"checkout": true, "checkout@1": true, "a.b-c_d@12": true,
		"": false, "Checkout": false, "checkout@": false, "checkout@0": false, "checkout@-1": false,
		"checkout@01": false, "checkout@x": false, "@3": false, "a@1@2": false,
	} {
		var v fault.Violations
		validatePromptRef(&v, "f", ref)
		require.Equal(t, valid, v.Err() == nil, "%q: %v", ref, v.Err())
	}
}

func TestCreateRunChecksPrompts(t *testing.T) {
	t.Parallel()
	b := setupPrompts(t)
	ctx := asTenant("acme")
	_, err := b.prompts.CreatePrompt(ctx, newControllerPrompt("drive", "{{.Goal}}"))
	require.NoError(t, err)
	_, err = b.prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{Name: "strict", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "Be strict."}})
	require.NoError(t, err)

	ref := func(controller, judge string) *wfv1.CreateRunRequest {
		return &wfv1.CreateRunRequest{Params: validParams(func(p *wfv1.RunParams) {
			if controller != "" {
				p.Controller = &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: controller}}
			}
			if judge != "" {
				p.Judge = &wfv1.JudgeSettings{Model: &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: judge}}}
			}
		})}
	}
	for _, tc := range []struct {
		name, controller, judge string
		fields                  []string
	}{
		{"missing controller prompt", "nope", "", []string{"params.controller.prompt_ref"}},
		{"missing version", "drive@2", "", []string{"params.controller.prompt_ref"}},
		{"judge prompt for the controller", "strict", "", []string{"params.controller.prompt_ref"}},
		{"controller prompt for the judge", "", "drive@1", []string{"params.judge.model.prompt_ref"}},
		{"both wrong", "strict", "drive", []string{"params.controller.prompt_ref", "params.judge.model.prompt_ref"}},
		{"malformed", "Drive", "", []string{"params.controller.prompt_ref"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.runs.CreateRun(ctx, ref(tc.controller, tc.judge))
			require.Equal(t, codes.InvalidArgument, codeOf(err), "%v", err)
			require.Equal(t, tc.fields, violationFields(t, err))
		})
	}
	run, err := b.runs.CreateRun(ctx, ref("drive", "strict@1"))
	require.NoError(t, err)
	require.Equal(t, "drive", run.Params.GetController().GetPromptRef(), "the reference is kept; it resolves when the run starts")

	// The run holds its prompts until it finishes.
	_, err = b.prompts.DeletePrompt(ctx, &wfv1.DeletePromptRequest{Name: "strict"})
	require.Equal(t, codes.FailedPrecondition, codeOf(err))
	_, err = b.runs.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id})
	require.NoError(t, err)
	_, err = b.prompts.DeletePrompt(ctx, &wfv1.DeletePromptRequest{Name: "strict"})
	require.NoError(t, err)
}
