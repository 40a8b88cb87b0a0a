package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func controllerPrompt(name, text string) *wfv1.Prompt {
	return &wfv1.Prompt{Name: name, Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, Template: text, CreatedBy: "local"}
}

func TestPromptVersions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(storetest.NewPool(t))

	p1, err := st.CreatePrompt(ctx, "default", &wfv1.Prompt{Name: "checkout", Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER,
		Template: "v1 {{.Goal}}", Description: "first", CreatedBy: "key:k1",
		Defaults: &wfv1.ModelSettings{Provider: "openai", Model: "gpt-4.1", Temperature: proto.Float64(0.2)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, p1.Version)
	require.NotNil(t, p1.CreateTime)
	p2, err := st.CreatePrompt(ctx, "default", controllerPrompt("checkout", "v2 {{.Goal}}"))
	require.NoError(t, err)
	require.EqualValues(t, 2, p2.Version)

	latest, err := st.GetPrompt(ctx, "default", "checkout", 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, latest.Version)
	require.Equal(t, "v2 {{.Goal}}", latest.Template)
	require.Nil(t, latest.Defaults, "every version has its own defaults")

	first, err := st.GetPrompt(ctx, "default", "checkout", 1)
	require.NoError(t, err)
	require.Equal(t, "v1 {{.Goal}}", first.Template)
	require.Equal(t, "first", first.Description)
	require.Equal(t, "key:k1", first.CreatedBy)
	require.Equal(t, wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, first.Role)
	require.True(t, proto.Equal(p1.Defaults, first.Defaults), "defaults %v", first.Defaults)

	_, err = st.GetPrompt(ctx, "default", "checkout", 3)
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = st.GetPrompt(ctx, "default", "nope", 0)
	require.ErrorIs(t, err, fault.ErrNotFound)

	// A name keeps its role.
	_, err = st.CreatePrompt(ctx, "default", &wfv1.Prompt{Name: "checkout", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "x"})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)

	versions, next, err := st.ListPromptVersions(ctx, "default", "checkout", "", 1)
	require.NoError(t, err)
	require.Len(t, versions, 1)
	require.EqualValues(t, 2, versions[0].Version)
	require.NotEmpty(t, next)
	versions, next, err = st.ListPromptVersions(ctx, "default", "checkout", next, 1)
	require.NoError(t, err)
	require.Len(t, versions, 1)
	require.EqualValues(t, 1, versions[0].Version)
	require.Empty(t, next)
	_, _, err = st.ListPromptVersions(ctx, "default", "nope", "", 10)
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, _, err = st.ListPromptVersions(ctx, "default", "checkout", "garbage!", 10)
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
}

func TestPromptConcurrentVersions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(storetest.NewPool(t))
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = st.CreatePrompt(ctx, "default", controllerPrompt("race", "t")) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	versions, _, err := st.ListPromptVersions(ctx, "default", "race", "", 50)
	require.NoError(t, err)
	require.Len(t, versions, n)
	for i, p := range versions {
		require.EqualValues(t, n-i, p.Version)
	}
}

func TestPromptListAndTenants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(storetest.NewPool(t))
	_, err := st.CreateTenant(ctx, &wfv1.Tenant{Id: "acme"})
	require.NoError(t, err)

	for _, name := range []string{"b", "a", "c", "a"} {
		_, err := st.CreatePrompt(ctx, "default", controllerPrompt(name, "default's "+name))
		require.NoError(t, err)
	}
	_, err = st.CreatePrompt(ctx, "acme", controllerPrompt("a", "acme's a"))
	require.NoError(t, err)
	_, err = st.CreatePrompt(ctx, "ghost", controllerPrompt("a", "x"))
	require.ErrorIs(t, err, fault.ErrNotFound)

	page, next, err := st.ListPrompts(ctx, "default", "", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, promptNames(page))
	require.EqualValues(t, 2, page[0].Version, "the latest version of each")
	page, next, err = st.ListPrompts(ctx, "default", next, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, promptNames(page))
	require.Empty(t, next)

	// Tenants share names but nothing else.
	acme, _, err := st.ListPrompts(ctx, "acme", "", 10)
	require.NoError(t, err)
	require.Len(t, acme, 1)
	require.Equal(t, "acme's a", acme[0].Template)
	require.EqualValues(t, 1, acme[0].Version, "versions are numbered per tenant")
	_, err = st.GetPrompt(ctx, "acme", "b", 0)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorIs(t, st.DeletePrompt(ctx, "acme", "b"), fault.ErrNotFound)
	require.NoError(t, st.DeletePrompt(ctx, "acme", "a"))
	got, err := st.GetPrompt(ctx, "default", "a", 0)
	require.NoError(t, err, "deleting acme's a leaves default's")
	require.Equal(t, "default's a", got.Template)
}

func promptNames(ps []*wfv1.Prompt) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestDeletePromptReferencedByRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(storetest.NewPool(t))
	_, err := st.CreatePrompt(ctx, "default", &wfv1.Prompt{Name: "strict", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "Be strict."})
	require.NoError(t, err)
	_, err = st.CreatePrompt(ctx, "default", controllerPrompt("strictly", "{{.Goal}}"))
	require.NoError(t, err)
	run, _, err := st.CreateRun(ctx, store.NewRun{Tenant: "default", Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com",
		Judge: &wfv1.JudgeSettings{Model: &wfv1.ModelSettings{Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "strict@1"}}}}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)

	err = st.DeletePrompt(ctx, "default", "strict")
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	require.Contains(t, err.Error(), run.Id)
	// A name that merely starts the same is not referenced, nor one that
	// matches it as a LIKE pattern would ("_" is any character).
	require.NoError(t, st.DeletePrompt(ctx, "default", "strictly"))
	_, err = st.CreatePrompt(ctx, "default", &wfv1.Prompt{Name: "stri_t", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "x"})
	require.NoError(t, err)
	require.NoError(t, st.DeletePrompt(ctx, "default", "stri_t"))

	_, err = st.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED})
	require.NoError(t, err)
	require.NoError(t, st.DeletePrompt(ctx, "default", "strict"))
	_, err = st.GetPrompt(ctx, "default", "strict", 1)
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestPinRunPromptsAndPromptRef(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(storetest.NewPool(t))
	run, _, err := st.CreateRun(ctx, store.NewRun{Tenant: "default", Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com"}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)

	pins, err := st.PinRunPrompts(ctx, run.Id, map[string]string{"controller": "c@1"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"controller": "c@1"}, pins)
	// A resumed run keeps its first pins and gains new ones.
	pins, err = st.PinRunPrompts(ctx, run.Id, map[string]string{"controller": "c@2", "judge": "j@4"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"controller": "c@1", "judge": "j@4"}, pins)
	// Reading them (nothing to add) leaves them as they are.
	pins, err = st.PinRunPrompts(ctx, run.Id, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"controller": "c@1", "judge": "j@4"}, pins)

	now := time.Now()
	_, err = st.RecordPromptRun(ctx, store.PromptRun{RunID: run.Id, Step: 1, Role: "controller", Provider: "openai", Model: "m",
		Request: []byte(`{}`), Start: now, End: now, PromptRef: "c@1"})
	require.NoError(t, err)
	prs, _, err := st.ListPromptRuns(ctx, run.Id, "", 10)
	require.NoError(t, err)
	require.Len(t, prs, 1)
	require.Equal(t, "c@1", prs[0].PromptRef)
}
