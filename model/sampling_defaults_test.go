package model

import "testing"

// Under keeps every setting the user gives and fills the others from the
// defaults; a setting neither gives stays nil.
func TestSamplingDefaultsUnder(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := 20
	d := SamplingDefaults{Temperature: f(0.7), TopP: f(0.8), TopK: &k, RepetitionPenalty: f(1.1)}
	got := d.Under(SamplingDefaults{Temperature: f(0), MinP: f(0.05)})
	if *got.Temperature != 0 || *got.TopP != 0.8 || *got.TopK != 20 || *got.MinP != 0.05 || *got.RepetitionPenalty != 1.1 {
		t.Errorf("Under: %+v", got)
	}
	if e := (SamplingDefaults{}).Under(SamplingDefaults{}); e.Any() || !d.Any() {
		t.Errorf("empty: %+v, Any %v", e, d.Any())
	}
}
