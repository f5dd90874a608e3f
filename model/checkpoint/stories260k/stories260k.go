// Package stories260k holds the built-in model: llama2.c's stories260K
// checkpoint and its 512-piece tokenizer (MIT, Andrej Karpathy; see the
// README and LICENSE beside this file), embedded so that a program with no
// checkpoint at hand still runs a model that writes text. checkpoint.Open
// opens it for an empty path.
package stories260k

import _ "embed" // the two files below

// Name is how errors and reports name the built-in model.
const Name = "stories260K (built in)"

// Checkpoint is stories260K.bin, a llama2.c legacy checkpoint: dim 64,
// hidden_dim 172, 5 layers, 8 heads over 4 KV heads, vocab 512, seq_len
// 512, shared classifier.
//
//go:embed stories260K.bin
var Checkpoint []byte

// Tokenizer is tok512.bin, its llama2.c tokenizer.
//
//go:embed tok512.bin
var Tokenizer []byte
