package model

// WeightBytes is what one decode step streams from memory for the
// weights: every matrix the forward pass multiplies by (WQKV, or WQ, WK
// and WV where a file keeps them apart, WO, W1, W2, W3 of each layer and
// the classifier) in its storage format, plus the norms and q/k/v biases
// (float32). The embedding contributes one row per token, which is
// negligible.
func (f *Forward) WeightBytes() int64 {
	ms := f.mats
	var n int64
	for _, l := range ms.layers {
		if l.wqkv != nil {
			n += l.wqkv.Bytes()
		} else {
			n += l.wq.Bytes() + l.wk.Bytes() + l.wv.Bytes()
		}
		n += l.wo.Bytes() + l.w1.Bytes() + l.w2.Bytes() + l.w3.Bytes()
	}
	n += ms.classifier.Bytes()
	vec := len(ms.finalNorm)
	for l := range ms.layers {
		vec += len(ms.attnNorm[l]) + len(ms.ffnNorm[l])
		if ms.bqkv != nil {
			vec += len(ms.bqkv[l])
		}
	}
	return n + 4*int64(vec)
}
