package store

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports gauges read from the database at scrape time: live runs
// by status and River jobs by state (the queue depth). Both queries use
// indexes on live rows only, so a scrape stays cheap however many finished
// runs the database holds.
type Collector struct {
	store *Store
	runs  *prometheus.Desc
	jobs  *prometheus.Desc
}

// NewCollector returns a Collector reading through s.
func NewCollector(s *Store) *Collector {
	return &Collector{
		store: s,
		runs:  prometheus.NewDesc("wayfinder_runs", "Live runs by status (all replicas).", []string{"status"}, nil),
		jobs:  prometheus.NewDesc("wayfinder_queue_jobs", "Unfinished queue jobs by state (all replicas); available is the backlog.", []string{"state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.runs
	ch <- c.jobs
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	counts := map[string]float64{}
	for _, s := range liveStatuses {
		counts[s] = 0
	}
	c.gather(ctx, ch, c.runs, `SELECT status, count(*) FROM runs WHERE status = ANY($1) GROUP BY status`, counts, liveStatuses)
	jobStates := []string{"available", "scheduled", "retryable", "running"}
	counts = map[string]float64{}
	for _, s := range jobStates {
		counts[s] = 0
	}
	c.gather(ctx, ch, c.jobs, `SELECT state::text, count(*) FROM river_job WHERE state::text = ANY($1) GROUP BY state`, counts, jobStates)
}

func (c *Collector) gather(ctx context.Context, ch chan<- prometheus.Metric, desc *prometheus.Desc, query string, counts map[string]float64, arg []string) {
	rows, err := c.store.pool.Query(ctx, query, arg)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(desc, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var label string
		var n int64
		if err := rows.Scan(&label, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(desc, err)
			return
		}
		counts[label] = float64(n)
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(desc, err)
		return
	}
	for label, n := range counts {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, n, label)
	}
}
