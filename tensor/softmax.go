package tensor

import "math"

// softmaxRow writes softmax(src row) to dst row as llama2.c does:
// subtract the max for stability, exponentiate, divide by the sum, all in
// float32. buf holds the exponentials so a half-precision row is rounded
// only once, on the final store.
func softmaxRow(dst, src *Storage, do, dstr, so, sstr, n int, buf []float32) {
	if n == 0 {
		return
	}
	buf = buf[:n]
	for j := range buf {
		buf[j] = src.load(so + j*sstr)
	}
	mx := buf[0]
	for _, v := range buf[1:] {
		if v > mx {
			mx = v
		}
	}
	var sum float32
	for j, v := range buf {
		e := float32(math.Exp(float64(v - mx)))
		buf[j] = e
		sum += e
	}
	for j, v := range buf {
		dst.store(do+j*dstr, v/sum)
	}
}

// SoftmaxLastDimInPlace replaces every row of t (its last dim) by its
// softmax, reading and writing through t's strides. It refuses a tensor
// whose elements overlap in memory (an expanded or unfolded view), as
// PyTorch's in-place ops do, since one location would be written by
// several rows. On a meta tensor it does nothing.
func SoftmaxLastDimInPlace(t *Tensor) error {
	const op = "softmax_"
	if err := checkOperands(op, t); err != nil {
		return err
	}
	if err := t.CheckNoOverlap(op); err != nil {
		return err
	}
	if t.st.meta {
		return nil
	}
	buf := make([]float32, lastDim(t))
	eachRow([]*Tensor{t}, func(offs, strs []int, n int) {
		softmaxRow(t.st, t.st, offs[0], strs[0], offs[0], strs[0], n, buf)
	})
	return nil
}
