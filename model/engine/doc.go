// Package engine is Stride's continuous-batching scheduler: it turns
// generation requests into forward passes over a paged KV cache, in the
// manner of vLLM's scheduler.
//
// # A run
//
// Run is four steps in a loop, one file each:
//
//	validate (request.go, run.go's accept)  check every request once; reject bad ones,
//	                                         finish forced-only ones, queue the rest
//	admit    (admit.go)   move waiting sequences into the running set while blocks allow
//	step     (step.go)    hand out this step's KV slots, preempting when the pool runs dry,
//	                      pack one batch of prefill and decode rows, run the forward pass
//	retire   (retire.go)  commit, sample each sequence's next token (its own Sampler, the rows
//	                      drawn in parallel: draw.go), stream it, free the finished
//
// Every step runs one Forward.Run over all running sequences: a newly
// admitted sequence contributes its uncached prompt positions (prefill
// rows), every other one its last token (one decode row). Their rows are
// packed back to back, vLLM's varlen layout, and attention.Batch tells the
// attention path which rows belong to whom.
//
// # The online loop
//
// Run drives one scheduler over a fixed list of requests. Start (or the
// first Submit) hands a scheduler of the same kind to a goroutine that
// takes submitted requests between steps, each with its own Stream and
// its own cancellation (online.go), and sleeps on a channel while there
// is no work. The engine also owns detokenizing (detok.go): events carry
// text released only once no stop string can still start in it and no
// UTF-8 character is cut, and the engine ends a sequence at a stop string
// itself. With Options.MaxBatchedTokens a prompt is prefilled in aligned
// chunks over several steps between the decodes (chunk.go), bit for bit
// as in one step; Options.PrefillStall sizes those chunks in time while
// streams decode, from step costs the scheduler measures (stall.go).
// Each Result records when its request arrived, was first scheduled,
// streamed its first generated token and finished (Timing, vLLM's
// RequestMetrics), so front ends time requests from one source.
// docs/serving.md has the design and measurements.
//
// # The cache does the bookkeeping
//
// The scheduler never reasons about blocks. kvcache.Cache.AppendStep
// hands out the step's slots for all sequences at once (all or nothing)
// and publishes their block tables; AddSequence shares cached prefix
// blocks; Commit registers the blocks a step completed for reuse. When
// AppendStep reports ErrOutOfBlocks, the most recently admitted sequence
// is preempted: its blocks are freed and it goes back to the front of
// the queue with its tokens and its sampler's state, to be recomputed
// when it is admitted again (vLLM's recompute preemption, except that the
// generated tokens are replayed one decode step each: see
// seqState.pending).
//
// # Same tokens, however it is scheduled
//
// A sequence's tokens never depend on what it was batched with, on
// preemption, or on prefix hits: every row's arithmetic is independent of
// the other rows, and both attention paths attend over exactly what the
// cache holds, in the cache's dtype, whether that context was computed in
// this step or an earlier one. Two rules keep every row's arithmetic the
// same as when the sequence runs alone: a preempted sequence recomputes in
// the shapes it first computed in (seqState.pending), and prefixes are
// shared only in multiples of the attention path's PrefillAlignment, so a
// prefill after a prefix hit is cut into the same kernel tiles as the
// whole prompt (kvcache.Config.PrefixAlignBlocks). The tests compare every
// sampled logit vector bit for bit with each sequence run alone, for every
// KV dtype and both paths.
//
// # Prefix sharing inside one batch
//
// Prompts submitted together often share a prefix. When a waiting prompt
// would share full blocks that a sequence admitted in this same step is
// only now computing (kvcache.Cache.PendingPrefixBlocks), admission stops
// there for this step, as vLLM's does: the next step admits it, and
// AddSequence finds those blocks committed and shares them. The delay is
// one step; the prefix is computed once.
//
// # Speculative decoding
//
// With Options.Speculation (spec.go, ngram.go; docs/speculative.md), a
// decoding sequence may draft up to k tokens from its own history before
// the step: the tokens that followed the most recent earlier occurrence
// of its last n tokens (n from NgramMax down to NgramMin), found through
// unfold(0, n, 1) window views of an int32 tensor of its tokens. The step
// builder then gives AppendStep N = k+1 for it and packs its last token
// and the drafts as k+1 rows over its existing context, asking
// Forward.Run for the logits of all of them; retire verifies the drafts
// (model.Sampler.Verify: the row's token sampled as a decode row would
// sample it, with the same coin, compared with the draft), keeps the
// accepted ones and the token after them,
// gives the rejected drafts' slots back with kvcache.Cache.Truncate and
// only then commits, so no block is registered with a rejected draft's
// K/V. The next AppendStep republishes the shortened table
// (Step.Changed), and a shared prefix block is never written: the cache
// copies it on write first. Every logit is the bits of a decode row and
// every kept token costs one coin, so a sequence's tokens, greedy or
// sampled, are those it has without speculation, however it is batched,
// preempted (a preempted sequence replays without drafting, then drafts
// again) or prefix-shared. What it drafts depends on its acceptance
// history and on the step's other rows, and changes only the steps its
// tokens take.
//
// # Watching the KV cache
//
// KVSnapshot and SubscribeKV (snapshot.go, kvevents.go) are served by the
// online loop itself at a step boundary, the only moment the cache and the
// queues hold still: a snapshot of every block and table with the
// requests they belong to, and one event per step (admitted, preempted,
// finished and cancelled sequences, the blocks allocated, freed, shared
// and copied on write, the step's slot mapping) that replays exactly onto
// it. A subscriber is never waited for: one that falls behind loses events
// and gets a resync snapshot. infer serve --debug-endpoints draws them
// (docs/serving.md).
//
// # Measuring, and the reports
//
// RunBench (benchsuite.go) measures llama-bench's cases, interleaved
// round by round, and Compare (compare.go) runs the same requests
// through the naive and the fused attention path, once or over a sweep
// of context lengths (CompareContexts). Their reports live beside them
// (benchreport.go, comparereport.go): rows with the JSON names the CLI
// prints, written as a table, Markdown or JSON to any io.Writer, so
// `infer bench`, `infer compare` and any other front end show the same
// bytes. The charts are in package engineplot, which alone imports
// gonum/plot.
package engine
