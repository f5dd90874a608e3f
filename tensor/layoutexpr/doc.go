// Package layoutexpr is the language behind `infer layout`: a small
// subset of Python and PyTorch, evaluated on meta tensors (so
// [2,32,4096,4096] costs nothing), that reports after every step the
// layout PyTorch would give: shape, strides, storage offset, contiguity,
// channels-last contiguity, whether the storage is new or shared (and with
// which variable), and the bytes a copy costs.
//
//	x = arange(12).view(3, 4)
//	y = x.t().contiguous()          # a copy: 96 bytes of int64
//	q, k, v = empty(2, 16, 192).split(64, -1)
//	s = q @ k.transpose(-2, -1) / 64**0.5
//
// It uses only package tensor's public API. The semantics follow PyTorch
// 1.13 (Debian's python3-torch) and are checked against PyTorch itself:
// testdata/torch-oracle.jsonl.gz is recorded by scripts/torch-oracle/gen.py
// and replayed by TestTorchOracle. Where PyTorch 2.x differs, the doc
// comment of the op says so.
//
// Grammar (whitespace is free; newlines end statements outside brackets):
//
//	program = stmt { (";" | newline) stmt }
//	stmt    = [ targets "=" ] expr
//	targets = name { "," name } [","] | "(" name { "," name } ")"
//	expr    = term { ("+" | "-") term }
//	term    = factor { ("*" | "/" | "//" | "@") factor }
//	factor  = ("-" | "+") factor | power
//	power   = postfix [ "**" factor ]
//	postfix = atom { "." name [ "(" args ")" ] | "(" args ")" | "[" subscripts "]" }
//	atom    = int | float | name | "..." | "(" expr ")" | "(" [ expr { "," expr } ] ")" | "[" ... "]"
//	args    = [ arg { "," arg } [","] ],  arg = [ name "=" ] expr
//
// Integers are bounded by 2^53 in magnitude. A program that does not
// parse, or calls a constructor or method that does not exist, is a
// *SyntaxError naming the column. Everything else runs: a failing step
// (a view that needs a copy, a bad argument) becomes the Error of the last
// row, with PyTorch's message, and evaluation stops there.
//
// The package is pure Go with no file or OS access, so it compiles to
// WebAssembly: Eval and JSON take a program string and return the rows.
package layoutexpr
