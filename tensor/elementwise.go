package tensor

// This file holds the elementwise in-place update ScaleInPlace and the
// broadcasting rule that matmul's batch dims follow.

// broadcastShapes returns the shape a and b broadcast to under PyTorch's
// rules: align the shapes on the right; each pair of sizes must be equal
// or one of them 1, and a missing leading dim counts as 1. op names the
// caller in the error.
func broadcastShapes(op string, a, b []int) ([]int, error) {
	nd := max(len(a), len(b))
	out := make([]int, nd)
	for i := nd - 1; i >= 0; i-- {
		sa, sb := 1, 1
		if k := i - (nd - len(a)); k >= 0 {
			sa = a[k]
		}
		if k := i - (nd - len(b)); k >= 0 {
			sb = b[k]
		}
		switch {
		case sa == sb || sb == 1:
			out[i] = sa
		case sa == 1:
			out[i] = sb
		default:
			return nil, errorf(op, "The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d (shapes %s and %s)",
				sa, sb, i, FormatInts(a), FormatInts(b))
		}
	}
	if _, err := numelOf(op, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ScaleInPlace multiplies every element of t by s (t.mul_(s)). It refuses
// a t that overlaps itself (bias.expand(4, 3) would scale each bias
// element four times), and does nothing on a meta t.
func ScaleInPlace(t *Tensor, s float32) error {
	const op = "mul_"
	if err := checkOperands(op, t); err != nil {
		return err
	}
	if err := t.CheckNoOverlap(op); err != nil {
		return err
	}
	if t.st.meta {
		return nil
	}
	eachRow([]*Tensor{t}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			o := offs[0] + j*strs[0]
			t.st.store(o, t.st.load(o)*s)
		}
	})
	return nil
}
