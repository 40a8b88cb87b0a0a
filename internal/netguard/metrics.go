package netguard

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the network guard's Prometheus metrics, shared by every run's
// proxy.
type Metrics struct {
	blocked *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (none when reg
// is nil). Create them once per process and hand them to every [Log].
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_network_blocked_total",
			Help: "Browser requests refused by the network guard, by policy reason and request kind.",
		}, []string{"reason", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.blocked)
	}
	return m
}

func (m *Metrics) observe(b Block) {
	if m == nil {
		return
	}
	m.blocked.WithLabelValues(string(b.Reason), string(b.Kind)).Inc()
}
