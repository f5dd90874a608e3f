package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
)

// The online engine: requests submitted while it runs, each with its own
// event stream and its own cancellation (here a timeout).
func ExampleEngine_Submit() {
	m, err := model.Synthesize(model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2,
		VocabSize: 64, SeqLen: 96, RopeTheta: 10000, NormEps: 1e-5}, 1)
	if err != nil {
		panic(err)
	}
	e, err := engine.New(m, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Submit(ctx, engine.Request{Prompt: []int{model.BOSID, 5, 6}, Steps: 12,
		Sampler: model.NewSampler(64, 0, 0, 1), Logprobs: true})
	if err != nil {
		panic(err)
	}
	n := 0
	for ev := range st.Events() {
		if !ev.Prompt {
			n++ // ev.Text, ev.Logprob: what a server streams
		}
	}
	r := st.Result()
	fmt.Println(n == len(r.Logprobs), r.FinishReason != engine.FinishError)
	// Output: true true
}
