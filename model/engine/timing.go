package engine

import "time"

// Timing is when a request passed each stage of its life in the engine,
// as vLLM's RequestMetrics records them (arrival_time,
// first_scheduled_time, first_token_time, finished_time), so every front
// end derives its latencies from one source. A stage never reached is
// the zero time: a rejected request has only Arrival and Finished, and
// one that generated nothing has no FirstToken.
type Timing struct {
	// Arrival is when Run or Submit took the request.
	Arrival time.Time
	// Scheduled is when the scheduler first admitted it into the KV
	// cache (a readmission after preemption does not move it);
	// Scheduled − Arrival is its queueing time.
	Scheduled time.Time
	// FirstToken is when its first generated token was streamed (its
	// Event, not a prompt token's).
	FirstToken time.Time
	// Finished is when its Result was reported.
	Finished time.Time
}

// TokensPerSecond is run.c's decode rate of the request: the generated
// tokens after the first, over the time from the first to the finish (so
// the prefill's wait is left out); 0 with fewer than two generated
// tokens.
func (r Result) TokensPerSecond() float64 {
	d := r.Timing.Finished.Sub(r.Timing.FirstToken).Seconds()
	if r.GeneratedTokens < 2 || d <= 0 {
		return 0
	}
	return float64(r.GeneratedTokens-1) / d
}

// arrive stamps q's arrival.
func (q *seqState) arrive() { q.res.Timing.Arrival = time.Now() }
