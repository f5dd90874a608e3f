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

// Resolve takes each setting from the user, else the checkpoint's
// defaults, else the front end's own.
func TestSamplingDefaultsResolve(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k, uk := 20, 5
	d := SamplingDefaults{Temperature: f(0.7), TopP: f(0.8), TopK: &k, RepetitionPenalty: f(1.1)}
	own := SamplingSettings{Temperature: 1, TopP: 0.9, TopK: 0, MinP: 0, RepetitionPenalty: 1}
	got := d.Resolve(SamplingDefaults{Temperature: f(0), MinP: f(0.05), TopK: &uk}, own)
	if want := (SamplingSettings{Temperature: 0, TopP: 0.8, TopK: 5, MinP: 0.05, RepetitionPenalty: 1.1}); got != want {
		t.Errorf("Resolve = %+v, want %+v", got, want)
	}
	if got := (SamplingDefaults{}).Resolve(SamplingDefaults{}, own); got != own {
		t.Errorf("nothing given: %+v, want the front end's own %+v", got, own)
	}
	if got := d.Resolve(SamplingDefaults{}, own); got.TopK != 20 || got.Temperature != 0.7 || got.MinP != 0 {
		t.Errorf("the checkpoint's defaults: %+v", got)
	}
}
