package worker

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Metrics are the worker's Prometheus metrics.
type Metrics struct {
	started      prometheus.Counter
	finished     *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	stepDuration prometheus.Histogram
	stepPhase    *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	modelCalls   *prometheus.CounterVec
	modelLatency *prometheus.HistogramVec
	verdicts     *prometheus.CounterVec
	takeovers    prometheus.Counter
	takeoverTime prometheus.Histogram
	// Record and replay.
	replays       *prometheus.CounterVec
	replayActions *prometheus.CounterVec
	callsSaved    prometheus.Counter
	tokensSaved   prometheus.Counter
}

// NewMetrics creates the worker metrics and registers them with reg (none
// when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_run_attempts_total", Help: "Run executions started by this replica (resumptions included).",
		}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_runs_finished_total", Help: "Runs finished by this replica, by final status.",
		}, []string{"status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wayfinder_run_duration_seconds",
			Help:    "Wall time of run executions, by final status.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
		}, []string{"status"}),
		stepDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_step_duration_seconds",
			Help:    "Wall time of run steps.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		stepPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wayfinder_step_phase_seconds",
			Help:    "Time spent in each phase of a step: snapshot, model, action, judge.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"phase"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_model_tokens_total", Help: "Model tokens by provider, model, role and direction (input, output, cached_input).",
		}, []string{"provider", "model", "role", "direction"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_model_cost_usd_total", Help: "Model cost in US dollars by provider, model and role (by the server's price table).",
		}, []string{"provider", "model", "role"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_model_calls_total", Help: "Model calls by provider, model, role and result (ok, error).",
		}, []string{"provider", "model", "role", "result"}),
		modelLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wayfinder_model_latency_seconds",
			Help:    "Latency of model calls by provider and role.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"provider", "role"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_judge_verdicts_total", Help: "Judge verdicts by source (heuristic, llm) and outcome (done, failed, continue).",
		}, []string{"source", "outcome"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_takeovers_total", Help: "Takeovers by a person, recorded as steps by actor human.",
		}),
		takeoverTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_takeover_duration_seconds",
			Help:    "How long a person had the browser.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_replays_total", Help: "Runs that asked for a replay, by mode (auto, strict) and outcome (replayed, healed, diverged, no_trace).",
		}, []string{"mode", "outcome"}),
		replayActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_replay_actions_total", Help: "Trace actions replayed without a model, by how the target was found (recorded_ref, relocated).",
		}, []string{"target"}),
		callsSaved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_replay_model_calls_saved_total", Help: "Controller model calls completed replays did not make (the recorded path's calls less the replay's).",
		}),
		tokensSaved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_replay_tokens_saved_total", Help: "Controller model tokens completed replays did not spend.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.started, m.finished, m.runDuration, m.stepDuration, m.stepPhase, m.tokens, m.cost,
			m.modelCalls, m.modelLatency, m.verdicts, m.takeovers, m.takeoverTime,
			m.replays, m.replayActions, m.callsSaved, m.tokensSaved)
	}
	return m
}

func (m *Metrics) observeStep(st runner.Step) {
	if st.Actor == "human" {
		// A person's time is not the engine's: counted apart.
		m.takeovers.Inc()
		m.takeoverTime.Observe(st.End.Sub(st.Start).Seconds())
		return
	}
	m.stepDuration.Observe(st.End.Sub(st.Start).Seconds())
	for phase, d := range map[string]time.Duration{"snapshot": st.Timings.Snapshot, "model": st.Timings.Model,
		"action": st.Timings.Action, "judge": st.Timings.Judge} {
		if d > 0 {
			m.stepPhase.WithLabelValues(phase).Observe(d.Seconds())
		}
	}
}

func (m *Metrics) observeReplay(r *wfv1.ReplayReport) {
	m.replays.WithLabelValues(modeLabel(r.GetMode()), outcomeLabel(r.GetOutcome())).Inc()
	m.replayActions.WithLabelValues("recorded_ref").Add(float64(r.GetReplayedActions() - r.GetRelocatedActions()))
	m.replayActions.WithLabelValues("relocated").Add(float64(r.GetRelocatedActions()))
	m.callsSaved.Add(float64(r.GetModelCallsSaved()))
	m.tokensSaved.Add(float64(r.GetTokensSaved()))
}

func (m *Metrics) observePrompt(pr runner.PromptRun) {
	role := string(pr.Role)
	result := "ok"
	if pr.Err != "" {
		result = "error"
	}
	m.modelCalls.WithLabelValues(pr.Provider, pr.Model, role, result).Inc()
	m.modelLatency.WithLabelValues(pr.Provider, role).Observe(pr.End.Sub(pr.Start).Seconds())
	m.tokens.WithLabelValues(pr.Provider, pr.Model, role, "input").Add(float64(pr.Usage.InputTokens))
	m.tokens.WithLabelValues(pr.Provider, pr.Model, role, "output").Add(float64(pr.Usage.OutputTokens))
	m.tokens.WithLabelValues(pr.Provider, pr.Model, role, "cached_input").Add(float64(pr.Usage.CachedInputTokens))
	m.cost.WithLabelValues(pr.Provider, pr.Model, role).Add(pr.CostUSD)
}

func (m *Metrics) observeVerdict(v *judge.Verdict) {
	if v == nil {
		return
	}
	outcome := "continue"
	switch {
	case v.Done:
		outcome = "done"
	case v.Failed:
		outcome = "failed"
	}
	m.verdicts.WithLabelValues(v.Source, outcome).Inc()
}

func (m *Metrics) observeFinish(status wfv1.RunStatus, d time.Duration) {
	label := statusLabel(status)
	m.finished.WithLabelValues(label).Inc()
	m.runDuration.WithLabelValues(label).Observe(d.Seconds())
}

// statusLabel turns RUN_STATUS_COMPLETED into "completed".
func statusLabel(s wfv1.RunStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "RUN_STATUS_"))
}
