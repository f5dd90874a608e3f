package model

// WeightBytes is what one decode step streams from memory for the
// weights: every matrix the forward pass multiplies by (WQKV, WO, W1, W2,
// W3 of each layer and the classifier) in its storage format, plus the
// norms. The embedding contributes one row per token, which is negligible.
func (f *Forward) WeightBytes() int64 {
	ms := f.mats
	var n int64
	for _, l := range ms.layers {
		n += l.wqkv.Bytes() + l.wo.Bytes() + l.w1.Bytes() + l.w2.Bytes() + l.w3.Bytes()
	}
	n += ms.classifier.Bytes()
	n += int64(4 * (len(ms.finalNorm) + 2*len(ms.attnNorm)*len(ms.finalNorm)))
	return n
}
