package pool

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	capacity  prometheus.Gauge
	inUse     prometheus.Gauge
	processes prometheus.Gauge
	restarts  *prometheus.CounterVec
	leaseWait prometheus.Histogram
	rss       prometheus.Gauge
	pss       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_capacity", Help: "Browser contexts the pool can serve at once.",
		}),
		inUse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_in_use", Help: "Browser contexts currently leased to runs.",
		}),
		processes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_browser_processes", Help: "Chromium processes running (taking leases or draining).",
		}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_pool_browser_restarts_total",
			Help: "Chromium processes replaced, by reason: crash, hang, recycle_runs, recycle_memory.",
		}, []string{"reason"}),
		leaseWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_pool_lease_wait_seconds",
			Help:    "Time from a lease request to a ready browser context, including waiting for a free slot.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		rss: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_browser_rss_bytes",
			Help: "Summed resident set size of every Chromium process group (shared pages counted once per process), as last measured.",
		}),
		pss: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_browser_pss_bytes",
			Help: "Summed proportional set size of every Chromium process group (what the memory limit compares), as last measured.",
		}),
	}
	for _, r := range []string{reasonCrash, reasonHang, reasonRecycleRuns, reasonRecycleMemory} {
		m.restarts.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.capacity, m.inUse, m.processes, m.restarts, m.leaseWait, m.rss, m.pss)
	}
	return m
}
