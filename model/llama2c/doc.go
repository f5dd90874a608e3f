// Package llama2c reads and writes llama2.c's checkpoint files: the
// legacy format run.c reads, export.py's version 1 (float32) and version 2
// (int8 with float32 group scales, what runq.c reads).
//
// The files have no common magic: a legacy file starts straight with its
// seven int32 sizes, versions 1 and 2 with "ak42". That is why a
// dispatcher (package model/checkpoint) tries llama2.c last, after the
// formats that do have one.
//
// The package is split by job:
//
//   - header.go parses the header (format, sizes, shared classifier,
//     group size);
//   - validate.go checks what it means against the file: a valid Config,
//     a usable group size, the exact byte size the layout implies, a
//     plausible seq_len;
//   - layout.go says where every tensor lies, in O(1) per kind of tensor,
//     and maps llama.cpp's canonical names (model.TensorAttnQ, ...) to it;
//   - file.go opens a file (mapped, or read) as a model.Source;
//   - write.go writes a model back (WriteLegacy, WriteV2);
//   - errors.go has the one error type, Error, which names the file.
//
// A File holds the tensors as the file stores them; model.FromSource
// turns it into a runnable Model (fusing wq, wk and wv into WQKV, tying the
// classifier to the embedding when the file shares it, converting dtypes).
//
//	f, err := llama2c.Open("stories260K.bin", model.LoadOptions{})
//	if err != nil { ... }
//	m, err := model.FromSource(f, model.LoadOptions{})
//	if err != nil { ... }
//	defer m.Close() // unmaps the file
package llama2c
