package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
)

// prefixHash identifies the token prefix a full block completes: the hash
// of block i chains the hash of block i-1 with block i's tokens,
//
//	h_0 = SHA-256(0³² ‖ tokens[0:bs])
//	h_i = SHA-256(h_{i-1} ‖ tokens[i·bs:(i+1)·bs])
//
// so equal hashes mean equal whole prefixes tokens[0:(i+1)·bs], not just
// equal last blocks. K and V at a position depend on every token up to it
// (causal attention), which is why a block can only be shared when its
// whole prefix matches. SHA-256 (vLLM's sha256 prefix-hash option) makes a
// collision, which would silently hand one prompt another's K/V,
// cryptographically unlikely rather than merely rare.
type prefixHash [sha256.Size]byte

// chainHash returns the hash of a block holding tokens after a prefix whose
// last full block hashed to parent (the zero hash for block 0).
func chainHash(parent prefixHash, tokens []int) prefixHash {
	h := sha256.New()
	h.Write(parent[:])
	var buf [8]byte
	for _, t := range tokens {
		binary.LittleEndian.PutUint64(buf[:], uint64(int64(t)))
		h.Write(buf[:])
	}
	var out prefixHash
	h.Sum(out[:0])
	return out
}
