package layoutexpr

import "github.com/stride-lm/stride/tensor"

// Type promotion, PyTorch 1.13's torch.promote_types and
// torch.result_type for the dtypes Stride knows.

// promote is torch.promote_types for the dtypes Stride knows.
func promote(a, b tensor.DType) tensor.DType {
	if a == b {
		return a
	}
	if a == tensor.Bool {
		return b
	}
	if b == tensor.Bool {
		return a
	}
	if a.IsFloat() || b.IsFloat() {
		if !b.IsFloat() {
			return a
		}
		if !a.IsFloat() {
			return b
		}
		if a == tensor.F64 || b == tensor.F64 {
			return tensor.F64
		}
		return tensor.F32 // f32 with a half type, or f16 with bf16
	}
	// Both integers.
	if a == tensor.U8 || b == tensor.U8 {
		o := b
		if b == tensor.U8 {
			o = a
		}
		if o == tensor.I8 {
			return tensor.I16
		}
		return o
	}
	if a.Size() >= b.Size() {
		return a
	}
	return b
}

// resultType is torch.result_type: dimensioned tensors outrank 0-d
// tensors, which outrank Python numbers, unless a lower group has a
// higher category (bool < integer < float).
func resultType(ops ...operand) tensor.DType {
	type group struct {
		dt tensor.DType
		ok bool
	}
	var dim, zero, wrapped group
	add := func(g *group, dt tensor.DType) {
		if g.ok {
			g.dt = promote(g.dt, dt)
		} else {
			*g = group{dt, true}
		}
	}
	for _, o := range ops {
		switch {
		case o.wrapped:
			add(&wrapped, o.dtype)
		case len(o.shape) == 0:
			add(&zero, o.dtype)
		default:
			add(&dim, o.dtype)
		}
	}
	combine := func(hi, lo group) group {
		if hi.ok && hi.dt.IsFloat() {
			return hi
		}
		if (hi.ok && hi.dt == tensor.Bool) || (lo.ok && lo.dt.IsFloat()) {
			switch {
			case !hi.ok:
				return lo
			case !lo.ok:
				return hi
			}
			return group{promote(hi.dt, lo.dt), true}
		}
		if hi.ok {
			return hi
		}
		return lo
	}
	r := combine(dim, combine(zero, wrapped))
	if !r.ok {
		return tensor.F32
	}
	return r.dt
}
