package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRates reads request rates: each item one rate or a comma list
// ("1,2,4,inf"); "inf" sends every request at once. Rates are > 0.
func ParseRates(items []string) ([]float64, error) {
	var out []float64
	for _, it := range items {
		for _, f := range strings.Split(it, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if strings.EqualFold(f, "inf") {
				out = append(out, math.Inf(1))
				continue
			}
			r, err := strconv.ParseFloat(f, 64)
			if err != nil || !(r > 0) || math.IsInf(r, 0) {
				return nil, fmt.Errorf("--request-rate: %q is not a rate > 0 or inf", f)
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--request-rate: no rate given")
	}
	return out, nil
}

// RateName is a request rate as ParseRates reads it and the report's
// labels show it: "inf", or the rate's shortest decimal form ("2.5").
func RateName(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return fmt.Sprintf("%g", r)
}

// ParsePercentiles reads "50,90,99": percentiles in [0, 100].
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p > 100 {
			return nil, fmt.Errorf("--percentiles: %q is not a percentile in [0, 100]", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseGoodput reads SLOs as vLLM's --goodput takes them: "ttft:MS",
// "tpot:MS" and "e2el:MS", as separate items or separated by spaces or
// commas, each bound > 0 milliseconds.
func ParseGoodput(items []string) (SLO, error) {
	var slo SLO
	for _, it := range items {
		for _, f := range strings.FieldsFunc(it, func(r rune) bool { return r == ' ' || r == ',' }) {
			name, val, ok := strings.Cut(f, ":")
			ms, err := strconv.ParseFloat(val, 64)
			if !ok || err != nil || !(ms > 0) || math.IsInf(ms, 0) {
				return SLO{}, fmt.Errorf("--goodput: %q is not ttft:MS, tpot:MS or e2el:MS with MS > 0", f)
			}
			switch strings.ToLower(name) {
			case "ttft":
				slo.TTFT = ms
			case "tpot":
				slo.TPOT = ms
			case "e2el":
				slo.E2EL = ms
			default:
				return SLO{}, fmt.Errorf("--goodput: %q names no metric: ttft, tpot or e2el", name)
			}
		}
	}
	return slo, nil
}
