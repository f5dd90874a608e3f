package tensor

import "math"

// RMSNorm returns x·w / sqrt(mean(x²) + eps) over the last dim of x, as a
// new contiguous tensor of x's dtype in x's Ledger. w is 1-D with the
// size of that dim (any stride). The arithmetic is llama2.c's rmsnorm in
// float32: ss = Σx², ss = 1/sqrt(ss/n + eps), out = w·(ss·x).
func RMSNorm(x, w *Tensor, eps float32) (*Tensor, error) {
	const op = "rms_norm"
	if err := checkOperands(op, x, w); err != nil {
		return nil, err
	}
	d := lastDim(x)
	if x.Dim() == 0 || w.Dim() != 1 || w.shape[0] != d {
		return nil, errorf(op, "weight of shape %s does not match the last dim of input of shape %s", FormatInts(w.shape), FormatInts(x.shape))
	}
	meta := x.st.meta || w.st.meta
	out, err := newTensor(x.st.led, x.st.dtype, x.shape, meta, op)
	if err != nil || meta {
		return out, err
	}
	ws, wo, wstr := w.st, w.offset, w.strides[0]
	eachRow([]*Tensor{out, x}, func(offs, strs []int, n int) {
		var ss float32
		for j := 0; j < n; j++ {
			v := x.st.load(offs[1] + j*strs[1])
			ss += v * v
		}
		ss /= float32(n)
		ss += eps
		ss = 1 / float32(math.Sqrt(float64(ss)))
		for j := 0; j < n; j++ {
			v := x.st.load(offs[1] + j*strs[1])
			out.st.store(offs[0]+j*strs[0], ws.load(wo+j*wstr)*(ss*v))
		}
	})
	return out, nil
}
