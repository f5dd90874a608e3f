package cuda

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestParseNcuCSV(t *testing.T) {
	f, err := os.Open("testdata/ncu_sample.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := ParseNcuCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 {
		t.Fatalf("%d kernels, want 2", len(ks))
	}
	if KernelBaseName(ks[0].Name) != "strided_copy" || KernelBaseName(ks[1].Name) != "reshape_and_cache" {
		t.Fatalf("names %q, %q", ks[0].Name, ks[1].Name)
	}
	if ks[0].Metrics[MetricLdSectors] != 131072 || ks[0].Metrics[MetricStRequests] != 4096 || ks[1].Metrics[MetricLdRequests] != 192 {
		t.Fatalf("metrics %v %v", ks[0].Metrics, ks[1].Metrics)
	}
	if _, ok := ks[1].Metrics[MetricStSectors]; ok {
		t.Fatal("a metric the report lacks was invented")
	}
	for _, bad := range []string{
		"",
		"no header here\n",
		`"ID","Kernel Name","Metric Name"` + "\n",
		`"ID","Kernel Name","Metric Name","Metric Value"` + "\n" + `"x","k","m","1"` + "\n",
		`"ID","Kernel Name","Metric Name","Metric Value"` + "\n" + `"0","k","m","NaN"` + "\n",
		`"ID","Kernel Name","Metric Name","Metric Value"` + "\n" + `"0","k"` + "\n",
	} {
		if _, err := ParseNcuCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestKernelBaseName(t *testing.T) {
	for in, want := range map[string]string{
		"void strided_copy<float>(float *, const float *, StrideCopyArgs)": "strided_copy",
		"reshape_and_cache":            "reshape_and_cache",
		"  void gather_kv<__half>(":    "gather_kv",
		"flash_attention_prefill(int)": "flash_attention_prefill",
	} {
		if got := KernelBaseName(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// ncuCSV writes a CSV in ncu's layout for the given kernels.
func ncuCSV(names []string, metrics []map[string]float64) string {
	var b strings.Builder
	b.WriteString(`"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"` + "\n")
	for i, n := range names {
		for _, m := range NcuMetrics {
			if v, ok := metrics[i][m]; ok {
				fmt.Fprintf(&b, "%q,%q,%q,%q,%q\n", fmt.Sprint(i), "void "+n+"<float>(float *)", m, "sector", fmt.Sprintf("%.0f", v))
			}
		}
	}
	return b.String()
}

// CompareNcu flags a metric off by more than the tolerance and passes one
// within it, matching launches by order and name.
func TestCompareNcu(t *testing.T) {
	sim, err := RunProfile(NewSimDevice())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var metrics []map[string]float64
	for i, m := range sim {
		names = append(names, m.Launch.Kernel)
		f := 1.02 // within 5%
		if i == 1 {
			f = 1.10 // the stride-1024 case measured 10% off
		}
		metrics = append(metrics, map[string]float64{
			MetricLdRequests: float64(m.Launch.Loads.Requests),
			MetricLdSectors:  float64(m.Launch.Loads.Sectors) * f,
			MetricStSectors:  float64(m.Launch.Stores.Sectors),
		})
	}
	ks, err := ParseNcuCSV(strings.NewReader(ncuCSV(names, metrics)))
	if err != nil {
		t.Fatal(err)
	}
	ag, err := CompareNcu(sim, ks, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if len(ag) != 3*len(sim) {
		t.Fatalf("%d comparisons, want %d", len(ag), 3*len(sim))
	}
	for _, a := range ag {
		wantOK := !(a.Case == sim[1].Case && a.Metric == MetricLdSectors)
		if a.OK != wantOK {
			t.Errorf("%s %s: ok=%v (simulated %v, measured %v)", a.Case, a.Metric, a.OK, a.Simulated, a.Measured)
		}
	}
	// a missing or renamed kernel is an error, not a silent pass
	if _, err := CompareNcu(sim, ks[1:], 0.05); err == nil {
		t.Error("a missing kernel was accepted")
	}
	names[0] = "gather_kv"
	ks2, _ := ParseNcuCSV(strings.NewReader(ncuCSV(names, metrics)))
	if _, err := CompareNcu(sim, ks2, 0.05); err == nil {
		t.Error("a different kernel name was accepted")
	}
}

// TestNcuAgreement is the check scripts/gpu-check.sh runs on a GPU
// machine: STRIDE_NCU_SIM is the JSON TestProfileWorkload wrote,
// STRIDE_NCU_CSV the `ncu --csv` report of the same run. Every request and
// sector count must agree within 5%.
func TestNcuAgreement(t *testing.T) {
	mp, cp := os.Getenv("STRIDE_NCU_SIM"), os.Getenv("STRIDE_NCU_CSV")
	if mp == "" || cp == "" {
		t.Skip("STRIDE_NCU_SIM and STRIDE_NCU_CSV not set: run by scripts/gpu-check.sh after profiling with ncu")
	}
	mb, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := ReadProfiledLaunches(bytes.NewReader(mb))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseNcuCSV(bytes.NewReader(cb))
	if err != nil {
		t.Fatal(err)
	}
	ag, err := CompareNcu(sim, ks, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%-72s %-48s %14s %14s %8s\n", "case", "metric", "simulated", "ncu", "Δ")
	for _, a := range ag {
		mark := "ok"
		if !a.OK {
			mark = "DIFFERS"
			t.Fail()
		}
		fmt.Printf("%-72s %-48s %14.0f %14.0f %7.2f%% %s\n", a.Case, a.Metric, a.Simulated, a.Measured, 100*a.RelErr, mark)
	}
}

func FuzzParseNcuCSV(f *testing.F) {
	if b, err := os.ReadFile("testdata/ncu_sample.csv"); err == nil {
		f.Add(string(b))
	}
	f.Add(`"ID","Kernel Name","Metric Name","Metric Value"` + "\n" + `"0","k","m","1,024"` + "\n")
	f.Add(`"ID"` + "\n\"")
	f.Fuzz(func(t *testing.T, s string) {
		ks, err := ParseNcuCSV(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, k := range ks {
			if k.Metrics == nil {
				t.Fatal("kernel without a metrics map")
			}
		}
	})
}

func FuzzReadProfiledLaunches(f *testing.F) {
	f.Add(`[{"case":"c","launch":{"kernel":"strided_copy","grid":[1,1,1],"block":[256,1,1],"loads":{"requests":1,"sectors":4}}}]`)
	f.Add(`[]`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ReadProfiledLaunches(strings.NewReader(s))
		if err != nil {
			return
		}
		// whatever decoded can be compared without panicking
		_, _ = CompareNcu(ls, nil, 0.05)
	})
}
