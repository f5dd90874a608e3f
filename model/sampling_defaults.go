package model

// SamplingDefaults are the sampling settings a checkpoint suggests for a
// request that leaves them unset: what a Hugging Face directory's
// generation_config.json gives, as transformers and vLLM's
// --generation-config auto apply it. A nil field suggests nothing, and the
// front end's own default holds. Settings the user or the request gives
// always win.
type SamplingDefaults struct {
	Temperature       *float64 // 0 = greedy
	TopP              *float64 // 1 = off
	TopK              *int     // 0 = off
	MinP              *float64 // 0 = off
	RepetitionPenalty *float64 // over the whole sequence, as transformers applies it; 1 = off
}

// Any reports whether d suggests any setting.
func (d SamplingDefaults) Any() bool {
	return d.Temperature != nil || d.TopP != nil || d.TopK != nil || d.MinP != nil || d.RepetitionPenalty != nil
}

// Under returns the settings user gives (a nil field: not given), each
// missing one taken from d: a checkpoint's defaults under what the user
// or the request asked for. Every front end resolves its sampling this
// way, then fills what is still nil with its own defaults.
func (d SamplingDefaults) Under(user SamplingDefaults) SamplingDefaults {
	pick := func(u, def *float64) *float64 {
		if u != nil {
			return u
		}
		return def
	}
	out := SamplingDefaults{Temperature: pick(user.Temperature, d.Temperature), TopP: pick(user.TopP, d.TopP),
		MinP: pick(user.MinP, d.MinP), RepetitionPenalty: pick(user.RepetitionPenalty, d.RepetitionPenalty), TopK: user.TopK}
	if out.TopK == nil {
		out.TopK = d.TopK
	}
	return out
}

// SamplingSettings are resolved sampling settings, each with its value:
// what a front end's sampler runs with (Resolve).
type SamplingSettings struct {
	Temperature       float64 // 0 = greedy
	TopP              float64 // 0 or 1 = off
	TopK              int     // 0 = off
	MinP              float64 // 0 = off
	RepetitionPenalty float64 // 0 or 1 = off
}

// Resolve is the one rule every front end resolves its sampling by: each
// setting user gives (a nil field: not given), else the one d, the
// checkpoint's defaults, suggests (Under), else own, the front end's own
// default. infer generate and chat resolve their keys this way, and
// infer serve each request's fields.
func (d SamplingDefaults) Resolve(user SamplingDefaults, own SamplingSettings) SamplingSettings {
	m := d.Under(user)
	for _, f := range []struct {
		v   *float64
		dst *float64
	}{{m.Temperature, &own.Temperature}, {m.TopP, &own.TopP}, {m.MinP, &own.MinP}, {m.RepetitionPenalty, &own.RepetitionPenalty}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if m.TopK != nil {
		own.TopK = *m.TopK
	}
	return own
}
