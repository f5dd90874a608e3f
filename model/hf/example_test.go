package hf_test

import (
	"fmt"
	"log"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/hf"
)

// Open a Hugging Face checkpoint directory and build its model. (Most
// callers use model/checkpoint.Open, which takes a directory as this and
// a file by its magic.)
func ExampleOpen() {
	src, err := hf.Open("SmolLM2-135M", model.LoadOptions{}, hf.Options{})
	if err != nil {
		log.Print(err) // e.g. "checkpoint SmolLM2-135M: stat SmolLM2-135M: no such file or directory"
		return
	}
	stops := src.StopTokens() // generation_config.json's eos_token_id (and the BOS id)
	m, err := model.FromSource(src, model.LoadOptions{})
	if err != nil {
		log.Print(err)
		return
	}
	defer m.Close()
	c := m.Config
	fmt.Println(c.Dim, c.NLayers, c.NHeads, c.NKVHeads, c.RopeStyle, stops)
}
