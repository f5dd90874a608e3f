package model

// The RoPE tables grow with the positions a Forward actually runs, not
// with seq_len: a header may claim seq_len 2^20 (4 GB of float32 tables at
// head_dim 1024) while a run uses a few hundred positions. They double
// when a step needs a position beyond them (capped at seq_len), so a run
// to position n computes O(n) entries in O(log n) growths, and a caller
// that knows how far it will go (the engine, from a request's Steps)
// reserves that once, so its decode steps never allocate. Every entry is
// computed the same way whatever the table's size (rotary.go), so the
// values are bit-identical to tables built for seq_len up front.

// RoPEPositions is the number of positions the RoPE tables cover now.
func (f *Forward) RoPEPositions() int { return f.rope.n }

// ReservePositions makes the RoPE tables cover positions 0 … n−1 (capped
// at seq_len), so that steps over those positions allocate nothing.
func (f *Forward) ReservePositions(n int) { f.rope.reserve(n) }
