package checkpoint_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
)

// Embed Stride in a Go program: open a checkpoint (the empty path is the
// built-in stories260K), build its model, start an engine and run a
// request. Greedy decoding reproduces llama2.c's run.c token for token.
func Example() {
	ck, err := checkpoint.Open("", checkpoint.Options{}) // or "model.gguf", "Qwen2.5-0.5B/", "stories15M.bin"
	if err != nil {
		log.Fatal(err)
	}
	m, err := ck.Load() // the model now owns the file
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	e, err := engine.New(m, engine.Options{}) // fused attention, a KV pool of 8 full sequences
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	gen := ck.Generation
	prompt, err := ck.Tokenizer.Encode("Once upon a time", gen.AddBOS, false)
	if err != nil {
		log.Fatal(err)
	}
	req := engine.Request{
		Prompt:     prompt,
		Steps:      31,                                              // positions, the prompt's included
		Sampler:    model.NewSampler(m.Config.VocabSize, 0, 0.9, 1), // temperature 0: greedy
		StopTokens: gen.StopTokens,                                  // nil: run.c's rule, stop at BOS
	}
	var text strings.Builder
	_, _, err = e.Run(context.Background(), []engine.Request{req}, engine.Hooks{
		Token: func(ev engine.Event) { text.WriteString(ck.Tokenizer.Decode(ev.Prev, ev.Token)) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text.String())
	// Output:
	// Once upon a time, there was a little girl named Lily. She loved to play outside in the park.
}

// What Open reports besides the tensors: the tokenizer and the generation
// settings a front end needs, whatever the format. (The built-in model is
// a llama2.c checkpoint: BOS 1 added to every prompt, and run.c's rule of
// stopping at BOS, which nil stop ids mean.)
func ExampleOpen() {
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer ck.Close() // not loaded: Close releases the file
	g := ck.Generation
	fmt.Println(ck.Source.Name(), ck.Kind, ck.Tokenizer.VocabSize())
	fmt.Println(g.BOS, g.AddBOS, g.StopTokens == nil, g.ChatTemplate == "")
	// Output:
	// stories260K (built in) llama2c 512
	// 1 true true true
}
