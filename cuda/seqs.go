package cuda

import "fmt"

// Seqs describes the sequences of one attention step: the same fields,
// with the same meaning, as attention.Batch (this package may import only
// tensor, so it has its own copy; converting is a field-by-field
// assignment). The new tokens of all sequences are packed row after row:
// sequence i owns token rows [QueryStart[i], QueryStart[i]+QueryLen[i]),
// whose positions are ContextLen[i]−QueryLen[i] … ContextLen[i]−1.
//
// On the device the metadata are int32 arrays: slot_mapping [T],
// query_start, query_len, context_lens [B], and block_tables
// [B, max_blocks] row-major with max_blocks = the longest table (shorter
// rows are padded with 0 and never read).
type Seqs struct {
	QueryStart  []int
	QueryLen    []int
	ContextLen  []int
	BlockTables [][]int32
	SlotMapping []int32
}

// NumSeqs returns the number of sequences.
func (s *Seqs) NumSeqs() int { return len(s.QueryLen) }

// MaxBlocks returns the width of the padded device block table.
func (s *Seqs) MaxBlocks() int {
	m := 0
	for _, t := range s.BlockTables {
		m = max(m, len(t))
	}
	return m
}

// MaxQueryLen returns the longest QueryLen.
func (s *Seqs) MaxQueryLen() int {
	m := 0
	for _, q := range s.QueryLen {
		m = max(m, q)
	}
	return m
}

// Validate checks the metadata against T token rows and a cache of
// numBlocks blocks of blockSize slots: every index a kernel will follow
// must be in range, because on a GPU an out-of-range index is a silent
// wild read, not a panic.
func (s *Seqs) Validate(T, numBlocks, blockSize int) error {
	if s == nil {
		return fmt.Errorf("seqs: nil")
	}
	b := len(s.QueryLen)
	if len(s.QueryStart) != b || len(s.ContextLen) != b || len(s.BlockTables) != b {
		return fmt.Errorf("seqs: %d query lengths, %d query starts, %d context lengths, %d block tables: want one of each per sequence",
			b, len(s.QueryStart), len(s.ContextLen), len(s.BlockTables))
	}
	if len(s.SlotMapping) != T {
		return fmt.Errorf("seqs: slot mapping has %d entries for %d token rows", len(s.SlotMapping), T)
	}
	if blockSize <= 0 || numBlocks <= 0 {
		return fmt.Errorf("seqs: cache of %d blocks of %d slots", numBlocks, blockSize)
	}
	for i := 0; i < b; i++ {
		qs, ql, cl := s.QueryStart[i], s.QueryLen[i], s.ContextLen[i]
		if ql < 0 || qs < 0 || qs+ql > T {
			return fmt.Errorf("seqs: sequence %d owns rows [%d, %d) outside the %d token rows", i, qs, qs+ql, T)
		}
		if cl < ql {
			return fmt.Errorf("seqs: sequence %d has context length %d < query length %d", i, cl, ql)
		}
		if need := (cl + blockSize - 1) / blockSize; len(s.BlockTables[i]) < need {
			return fmt.Errorf("seqs: sequence %d has %d positions but its block table lists %d blocks of %d", i, cl, len(s.BlockTables[i]), blockSize)
		}
		for j, blk := range s.BlockTables[i] {
			if blk < 0 || int(blk) >= numBlocks {
				return fmt.Errorf("seqs: block table %d entry %d is block %d, outside the cache's %d blocks", i, j, blk, numBlocks)
			}
		}
	}
	for t, slot := range s.SlotMapping {
		if int64(slot) >= int64(numBlocks)*int64(blockSize) {
			return fmt.Errorf("seqs: slot %d of token %d is out of range (cache holds %d slots)", slot, t, numBlocks*blockSize)
		}
	}
	return nil
}

// flatTables returns the padded [B, MaxBlocks] block table.
func (s *Seqs) flatTables() []int32 {
	mb := s.MaxBlocks()
	out := make([]int32, len(s.BlockTables)*mb)
	for i, t := range s.BlockTables {
		copy(out[i*mb:], t)
	}
	return out
}

// physSlot returns the cache slot holding position p of sequence i.
func (s *Seqs) physSlot(i, p, blockSize int) int64 {
	return int64(s.BlockTables[i][p/blockSize])*int64(blockSize) + int64(p%blockSize)
}

// SeqAddrs are the device addresses of a Seqs' int32 arrays.
type SeqAddrs struct {
	SlotMapping, QueryStart, QueryLen, ContextLens, BlockTables uint64
}

// Place gives a Seqs' arrays addresses in the simulation's address space.
func (s *Seqs) Place(as *AddressSpace) SeqAddrs {
	return SeqAddrs{
		SlotMapping: as.Ints(len(s.SlotMapping)),
		QueryStart:  as.Ints(len(s.QueryStart)),
		QueryLen:    as.Ints(len(s.QueryLen)),
		ContextLens: as.Ints(len(s.ContextLen)),
		BlockTables: as.Ints(max(1, len(s.BlockTables)*s.MaxBlocks())),
	}
}

// UniformSeqs returns the metadata of b sequences of seqLen new tokens
// each on top of ctx−seqLen cached ones (ctx = seqLen: a fresh prefill;
// seqLen = 1: a decode step), packed back to back, with each sequence's
// blocks allocated contiguously after the previous sequence's. It returns
// the metadata and the number of cache blocks used.
func UniformSeqs(b, seqLen, ctx, blockSize int) (*Seqs, int, error) {
	if b <= 0 || seqLen <= 0 || ctx < seqLen || blockSize <= 0 {
		return nil, 0, fmt.Errorf("uniform seqs: batch %d, %d new tokens, context %d, block size %d", b, seqLen, ctx, blockSize)
	}
	per := (ctx + blockSize - 1) / blockSize
	s := &Seqs{}
	for i := 0; i < b; i++ {
		s.QueryStart = append(s.QueryStart, i*seqLen)
		s.QueryLen = append(s.QueryLen, seqLen)
		s.ContextLen = append(s.ContextLen, ctx)
		t := make([]int32, per)
		for j := range t {
			t[j] = int32(i*per + j)
		}
		s.BlockTables = append(s.BlockTables, t)
		for p := ctx - seqLen; p < ctx; p++ {
			s.SlotMapping = append(s.SlotMapping, int32(s.physSlot(i, p, blockSize)))
		}
	}
	return s, b * per, nil
}
