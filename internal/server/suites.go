package server

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/suite"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// graders builds a rubric oracle's grading model the way a run's LLM judge
// is built: the oracle's model settings, else the test's judge model
// settings, else its controller's; the server's keys or the test's stored
// credential (audited as used by "suite").
func graders(st *store.Store, keyring *secrets.Keyring, models *worker.Models, logger *slog.Logger) suite.ModelFor {
	return func(ctx context.Context, t *wfv1.Test, o *wfv1.RubricOracle) (llm.Model, error) {
		p := proto.CloneOf(t.GetParams())
		if p == nil {
			p = &wfv1.RunParams{}
		}
		judge := &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM, Model: p.GetJudge().GetModel()}
		if o.GetModel() != nil {
			judge.Model = o.GetModel()
		}
		p.Judge = judge
		m := models
		if names := worker.CredentialNames(p); len(names) > 0 {
			keys, err := worker.ModelKeys(ctx, st, keyring, logger, tenant.ID(ctx), "suite", "", names)
			if err != nil {
				return nil, err
			}
			m = m.WithRunKeys(keys)
		}
		return m.Judge(p)
	}
}
