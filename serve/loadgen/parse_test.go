package loadgen

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	rates, err := ParseRates([]string{"1,2.5", " inf", "4"})
	if err != nil || fmt.Sprint(rates) != fmt.Sprint([]float64{1, 2.5, math.Inf(1), 4}) {
		t.Errorf("rates %v %v", rates, err)
	}
	for _, bad := range [][]string{{"0"}, {"-1"}, {"x"}, {"NaN"}, {""}, {"+Inf"}} {
		if _, err := ParseRates(bad); err == nil || !strings.HasPrefix(err.Error(), "--request-rate") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	ps, err := ParsePercentiles("50, 90,99.9")
	if err != nil || fmt.Sprint(ps) != "[50 90 99.9]" {
		t.Errorf("percentiles %v %v", ps, err)
	}
	if _, err := ParsePercentiles("101"); err == nil {
		t.Error("101 accepted")
	}
	slo, err := ParseGoodput([]string{"ttft:500 tpot:50", "e2el:2000"})
	if err != nil || slo != (SLO{TTFT: 500, TPOT: 50, E2EL: 2000}) {
		t.Errorf("goodput %+v %v", slo, err)
	}
	for _, bad := range []string{"ttft", "ttft:-1", "itl:5", "ttft:x"} {
		if _, err := ParseGoodput([]string{bad}); err == nil || !strings.HasPrefix(err.Error(), "--goodput") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// RateName is ParseRates' inverse: every name reads back as its rate.
func TestRateName(t *testing.T) {
	for _, r := range []float64{1, 2.5, 0.125, 1e-3, 100, math.Inf(1)} {
		name := RateName(r)
		back, err := ParseRates([]string{name})
		if err != nil || len(back) != 1 || back[0] != r {
			t.Errorf("RateName(%g) = %q, which reads back as %v, %v", r, name, back, err)
		}
	}
	if got := RateName(4); got != "4" {
		t.Errorf("RateName(4) = %q, want 4", got)
	}
}
