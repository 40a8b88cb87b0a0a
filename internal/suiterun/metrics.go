package suiterun

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Metrics are the suite run executor's Prometheus metrics.
type Metrics struct {
	finished *prometheus.CounterVec
	tests    *prometheus.CounterVec
}

// NewMetrics creates the executor's metrics and registers them with reg
// (none when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_suite_runs_finished_total", Help: "Suite runs finished by this replica, by final status.",
		}, []string{"status"}),
		tests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_suite_tests_total", Help: "Tests of suite runs decided by this replica, by outcome.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.finished, m.tests)
	}
	return m
}

func (m *Metrics) observeSuiteRun(s wfv1.SuiteRunStatus) {
	if m != nil {
		m.finished.WithLabelValues(strings.ToLower(strings.TrimPrefix(s.String(), "SUITE_RUN_STATUS_"))).Inc()
	}
}

func (m *Metrics) observeTest(o wfv1.TestOutcome) {
	if m != nil {
		m.tests.WithLabelValues(strings.ToLower(strings.TrimPrefix(o.String(), "TEST_OUTCOME_"))).Inc()
	}
}
