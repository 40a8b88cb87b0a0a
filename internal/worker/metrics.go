package worker

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Metrics are the worker's Prometheus metrics.
type Metrics struct {
	started      prometheus.Counter
	finished     *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	stepDuration prometheus.Histogram
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
	}
	if reg != nil {
		reg.MustRegister(m.started, m.finished, m.runDuration, m.stepDuration)
	}
	return m
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
