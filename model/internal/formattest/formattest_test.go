package formattest

import (
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// Greedy generation from BOS on stories260K.bin is run.c's golden ids
// (recorded by running llama2.c's run.c) for as many steps as it has.
func TestGenerateIsRunC(t *testing.T) {
	golden := testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
	src, err := llama2c.Open(testfixture.File(t, "models/stories260K.bin"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromSource(src, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := Generate(t, m, []int{model.BOSID}, len(golden), 0, 0.9, 1, nil)
	if !slices.Equal(got, golden) {
		t.Fatalf("greedy ids\n got %v\nwant %v", got, golden)
	}
}
