package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// APILoad is request latency under an open-loop load (requests sent on a
// fixed schedule whatever the server's answers, latency from the
// scheduled send time, so a stalled server cannot hide its stall by
// slowing the sender), while the runs it creates execute, and the
// delivery latency of step events to a StreamRunEvents client.
type APILoad struct {
	// Duration is how long the load lasted; Capacity the server's
	// browser capacity.
	Duration time.Duration
	Capacity int
	// Ops are the request kinds, each at its rate.
	Ops []APIOp
	// Events is a STEP_FINISHED event's time (set as it is stored) to its
	// receipt by a StreamRunEvents client, in milliseconds, over the
	// streams of every run the load created.
	Events Dist
	// RunsStarted counts the created runs that started during the load
	// (the rest were cancelled at its end).
	RunsStarted, RunsCreated int
	// Err is the failure that cut the measurement short.
	Err string
}

// APIOp is one request kind at one rate.
type APIOp struct {
	// Name is the RPC, Protocol "gRPC" or "REST".
	Name, Protocol string
	// Rate is the requests per second scheduled.
	Rate float64
	// Sent and Errors count the requests and the failed ones.
	Sent, Errors int
	// Latency is from the scheduled send time to the whole answer, ms.
	Latency Dist
	// FirstError is the first failure, if any.
	FirstError string
}

// openLoop sends rate requests a second for d, each on its schedule in a
// goroutine of its own, and returns the latencies from the scheduled
// times.
func openLoop(ctx context.Context, rate float64, d time.Duration, do func(context.Context) error) (lat []time.Duration, errs int, first string) {
	n := int(d.Seconds() * rate)
	interval := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sched := start.Add(time.Duration(i) * interval)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(sched)):
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := do(rctx)
			took := time.Since(sched)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, took)
			if err != nil {
				errs++
				if first == "" {
					first = err.Error()
				}
			}
		})
	}
	wg.Wait()
	return lat, errs, first
}

// runIDs is the set of runs the API load created, for GetRun to pick
// from and for the end to cancel.
type runIDs struct {
	mu  sync.Mutex
	ids []string
}

func (r *runIDs) add(id string) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

func (r *runIDs) pick() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[rand.IntN(len(r.ids))]
}

func (r *runIDs) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// eventLatencies collects STEP_FINISHED delivery latencies.
type eventLatencies struct {
	mu  sync.Mutex
	lat []time.Duration
	wg  sync.WaitGroup
}

// follow streams a run's events until it finishes or ctx ends, keeping
// the delivery latency of the step events that happened after it
// subscribed.
func (ev *eventLatencies) follow(ctx context.Context, client wfv1.RunServiceClient, runID string) {
	ev.wg.Go(func() {
		since := time.Now()
		stream, err := client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: runID})
		if err != nil {
			return
		}
		for {
			e, err := stream.Recv()
			if err != nil {
				return
			}
			got := time.Now()
			switch e.Type {
			case wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED:
				if t := e.GetTime().AsTime(); t.After(since) {
					ev.mu.Lock()
					ev.lat = append(ev.lat, got.Sub(t))
					ev.mu.Unlock()
				}
			case wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED:
				return
			}
		}
	})
}

// measureAPI runs the open-loop load against one server of APICapacity:
// CreateRun and GetRun over gRPC and over REST at once, the created runs
// executing (each followed by a StreamRunEvents client), then cancels the
// runs still queued or running.
func (e *loadEnv) measureAPI(ctx context.Context) APILoad {
	res := APILoad{Duration: e.cfg.APIDuration, Capacity: e.cfg.APICapacity}
	s, err := e.startServer(ctx, e.cfg.APICapacity)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer s.stop()
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var ev eventLatencies
	ids := &runIDs{}
	seed, err := s.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: e.runParams()})
	if err != nil {
		res.Err = fmt.Sprintf("create run: %v", err)
		return res
	}
	ids.add(seed.Id)
	ev.follow(streamCtx, s.client, seed.Id)

	body, err := protojson.Marshal(e.runParams())
	if err != nil {
		res.Err = err.Error()
		return res
	}
	base := "http://" + s.addrs.HTTP
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer httpClient.CloseIdleConnections()
	rest := func(ctx context.Context, method, path string, body []byte, into *wfv1.Run) error {
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %.200s", method, path, resp.Status, b)
		}
		if into != nil {
			return protojson.Unmarshal(b, into)
		}
		return nil
	}
	ops := []struct {
		name, proto string
		rate        float64
		do          func(context.Context) error
	}{
		{"CreateRun", "gRPC", e.cfg.CreateRate, func(ctx context.Context) error {
			run, err := s.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: e.runParams()})
			if err != nil {
				return err
			}
			ids.add(run.Id)
			ev.follow(streamCtx, s.client, run.Id)
			return nil
		}},
		{"CreateRun", "REST", e.cfg.CreateRate, func(ctx context.Context) error {
			var run wfv1.Run
			if err := rest(ctx, http.MethodPost, "/v1/runs", body, &run); err != nil {
				return err
			}
			if run.Id == "" {
				return errors.New("POST /v1/runs: no run id in the answer")
			}
			ids.add(run.Id)
			ev.follow(streamCtx, s.client, run.Id)
			return nil
		}},
		{"GetRun", "gRPC", e.cfg.GetRate, func(ctx context.Context) error {
			_, err := s.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: ids.pick()})
			return err
		}},
		{"GetRun", "REST", e.cfg.GetRate, func(ctx context.Context) error {
			return rest(ctx, http.MethodGet, "/v1/runs/"+ids.pick(), nil, nil)
		}},
	}
	res.Ops = make([]APIOp, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			lat, errs, first := openLoop(ctx, op.rate, e.cfg.APIDuration, op.do)
			res.Ops[i] = APIOp{Name: op.name, Protocol: op.proto, Rate: op.rate, Sent: len(lat), Errors: errs,
				Latency: distOf(lat), FirstError: first}
		})
	}
	wg.Wait()

	// Cancel what is left, and let the streams see the runs finish.
	all := ids.all()
	res.RunsCreated = len(all)
	if err := e.db.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = ANY($1::uuid[]) AND started_at IS NOT NULL`, all).Scan(&res.RunsStarted); err != nil {
		res.Err = fmt.Sprintf("count started runs: %v", err)
	}
	for _, id := range all {
		_, _ = s.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: id, Reason: "benchmark load ended"})
	}
	if err := e.waitDone(ctx, all, 2*time.Minute); err != nil && res.Err == "" {
		res.Err = err.Error()
	}
	done := make(chan struct{})
	go func() { ev.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		stopStreams()
		<-done
	}
	res.Events = distOf(ev.lat)
	for _, op := range res.Ops {
		if op.Errors > 0 && res.Err == "" {
			res.Err = fmt.Sprintf("%s over %s: %d of %d failed, first: %s", op.Name, op.Protocol, op.Errors, op.Sent, op.FirstError)
		}
	}
	return res
}

// measureReplicas drains ReplicaRuns runs with one replica, then the same
// number with two replicas of the same capacity on the same database,
// and reads which replica ran each run from River's job table.
func (e *loadEnv) measureReplicas(ctx context.Context) ReplicaResult {
	res := ReplicaResult{Runs: e.cfg.ReplicaRuns, CapacityEach: e.cfg.ReplicaCapacity}
	fail := func(err error) ReplicaResult { res.Err = err.Error(); return res }
	limit := 2*time.Minute + time.Duration(res.Runs)*20*time.Second/time.Duration(res.CapacityEach)

	a, err := e.startServer(ctx, res.CapacityEach)
	if err != nil {
		return fail(err)
	}
	ids, err := e.createRuns(ctx, a, res.Runs)
	if err == nil {
		err = e.waitDone(ctx, ids, limit)
	}
	var rec runRecords
	if err == nil {
		rec, err = fetchRecords(ctx, a, ids)
	}
	a.stop()
	if err != nil {
		return fail(fmt.Errorf("one replica: %w", err))
	}
	res.One, res.CompletedOne = rec.drain(), rec.completed()

	a, err = e.startServer(ctx, res.CapacityEach)
	if err != nil {
		return fail(err)
	}
	defer a.stop()
	b, err := e.startServer(ctx, res.CapacityEach)
	if err != nil {
		return fail(err)
	}
	defer b.stop()
	ids, err = e.createRuns(ctx, a, res.Runs)
	if err == nil {
		err = e.waitDone(ctx, ids, limit)
	}
	if err == nil {
		rec, err = fetchRecords(ctx, a, ids)
	}
	if err != nil {
		return fail(fmt.Errorf("two replicas: %w", err))
	}
	res.Two, res.CompletedTwo = rec.drain(), rec.completed()
	rows, err := e.db.Query(ctx, `SELECT j.attempted_by[array_length(j.attempted_by, 1)], count(*)
		FROM runs r JOIN river_job j ON j.id = r.job_id WHERE r.id = ANY($1::uuid[]) GROUP BY 1 ORDER BY 2 DESC`, ids)
	if err != nil {
		return fail(fmt.Errorf("replica shares: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var client *string
		var n int
		if err := rows.Scan(&client, &n); err != nil {
			return fail(fmt.Errorf("replica shares: %w", err))
		}
		res.Shares = append(res.Shares, n)
	}
	if err := rows.Err(); err != nil {
		return fail(fmt.Errorf("replica shares: %w", err))
	}
	if res.CompletedOne < res.Runs || res.CompletedTwo < res.Runs {
		res.Err = fmt.Sprintf("completed %d and %d of %d runs; %s", res.CompletedOne, res.CompletedTwo, res.Runs, rec.firstFailure())
	}
	return res
}
