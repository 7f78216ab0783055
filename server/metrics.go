package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/davidgoliath/dgenv/env"
)

// metrics are the server's Prometheus series, on a registry of its own (so
// several servers can live in one test binary). No label ever carries a
// session id: cardinality stays fixed.
type metrics struct {
	reg         *prometheus.Registry
	steps       prometheus.Counter
	stepLatency prometheus.Histogram
	errors      *prometheus.CounterVec
	expired     prometheus.Counter
	retries     *prometheus.CounterVec
}

var allCodes = []env.Code{env.CodeBadRequest, env.CodeUnauthorized, env.CodeNotFound, env.CodeBusy, env.CodeStaleSeq, env.CodeConflict, env.CodeTooLarge,
	env.CodeIllegalAction, env.CodeLimit, env.CodeUnavailable, env.CodeInternal}

func newMetrics(r *registry) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		steps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dgserver_env_steps_total",
			Help: "Env-steps taken: num_envs for every successful step request.",
		}),
		stepLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dgserver_step_duration_seconds",
			Help:    "Time to serve a successful step request, body read to answer written.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18), // 25us .. 3.3s
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dgserver_errors_total",
			Help: "Error answers by error code.",
		}, []string{"code"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dgserver_sessions_expired_total",
			Help: "Sessions deleted by the idle sweeper.",
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dgserver_retries_answered_total",
			Help: "Retried requests answered with what they had produced (a batch again, or the created session), by route.",
		}, []string{"route"}),
	}
	for _, r := range []string{"create", "reset", "step"} {
		m.retries.WithLabelValues(r)
	}
	for _, c := range allCodes {
		m.errors.WithLabelValues(string(c))
	}
	m.reg.MustRegister(m.steps, m.stepLatency, m.errors, m.expired, m.retries,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dgserver_sessions_active",
			Help: "Sessions alive (created and not yet deleted or expired).",
		}, func() float64 { s, _ := r.counts(); return float64(s) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dgserver_memory_reserved_bytes",
			Help: "Memory all sessions (and the policy act requests in flight) may come to hold at worst, as counted against limits.memory_budget.",
		}, func() float64 { return float64(r.bytesInUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dgserver_envs_active",
			Help: "Envs held by all sessions (those being created included).",
		}, func() float64 { _, e := r.counts(); return float64(e) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
