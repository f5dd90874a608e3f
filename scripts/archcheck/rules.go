package main

// rule is what one package of the module is and may import. docs/architecture.md
// is the prose of this table; TestDocNamesEveryPackage keeps the two in step.
type rule struct {
	// pkg is the import path inside the module ("tensor/kernels"); a
	// trailing "/..." also covers every package below it.
	pkg string
	// concept is the package's one concept.
	concept string
	// imports are the module packages it may import ("*": any).
	imports []string
	// external are the import-path prefixes outside the module and the
	// standard library that it may import.
	external []string
	// planned marks a package that is being created and may not exist yet.
	planned bool
	// below are module packages a "*" rule still may not import: the
	// lower floors a front end should reach only through the library
	// above them. because names, for each one the package does import
	// all the same, why it must (a missing reason is a violation).
	below   []string
	because map[string]string
}

// Module path prefixes of the dependencies go.mod allows.
const (
	xSys    = "golang.org/x/sys/"
	jinja   = "github.com/ardanlabs/jinja"
	float16 = "github.com/x448/float16"
	gonum   = "gonum.org/v1/gonum/"
	plot    = "gonum.org/v1/plot"
	cobra   = "github.com/spf13/cobra"
	pflag   = "github.com/spf13/pflag"
	viper   = "github.com/spf13/viper"
	prom    = "github.com/prometheus/client_golang/"
)

// formatImports is what a checkpoint format package may import: the model
// contract it fills in, the tokenizer its vocabulary becomes, the tensor
// core and kernels for dtype conversion, and the file-mapping helper.
var formatImports = []string{"model", "model/tokenizer", "model/mapfile", "tensor", "tensor/kernels"}

// frontEndFloor are the packages below the library's front door
// (model/engine, model/checkpoint, model/chat): a front end that imports
// them directly is doing the library's work by hand.
var frontEndFloor = []string{"tensor/kernels", "attention", "cuda"}

// rules is the package graph, bottom to top: imports flow downwards only.
var rules = []rule{
	{pkg: "tensor/kernels", concept: "CPU compute kernels: matmul over weight formats, attention row kernels, SwiGLU, worker pool",
		external: []string{xSys, float16}},
	{pkg: "tensor", concept: "strided tensors over shared storage, dtypes, the Ledger that accounts copies and allocations",
		imports: []string{"tensor/kernels"}, external: []string{float16, gonum}},
	{pkg: "tensor/layoutexpr", concept: "the `infer layout` expression language, on tensor's public API",
		imports: []string{"tensor"}, external: []string{plot}},
	{pkg: "tensor/testfixture", concept: "test helper: the shared fixtures, skipped outside CI and required under CI=true; what several packages' tests check with (recorded ids, bitwise tensor equality, the top-p reference distribution, fuzz seed corpora kept current)"},
	{pkg: "kvcache", concept: "the paged KV cache: block pool, block tables, slot mapping, prefix sharing",
		imports: []string{"tensor"}},
	{pkg: "attention", concept: "attention paths (naive, fused paged) over a Batch of sequences",
		imports: []string{"tensor", "tensor/kernels", "kvcache"}},
	{pkg: "model/tokenizer", concept: "tokenization (SentencePiece BPE, byte-level BPE), knowing no model"},
	{pkg: "model/mapfile", concept: "read-only file mappings for checkpoint loaders"},
	{pkg: "configs", concept: "typed settings: keys declared once, read from flag > INFER_* env > YAML file > default, each value checked with one clear line",
		external: []string{pflag, viper}},
	{pkg: "model/chat", concept: "chat templates: the built-ins, a model's own, the fallback, the guard and budget, and the prompt's token ids (control tokens from markup only)",
		imports: []string{"model/tokenizer"}, external: []string{jinja}},
	{pkg: "model", concept: "the LLM: Config, Weights, Forward, Sampler, the Source contract formats implement",
		imports: []string{"tensor", "tensor/kernels", "attention", "kvcache", "model/tokenizer", "model/mapfile"}},
	{pkg: "model/llama2c", concept: "llama2.c .bin checkpoints and tokenizer.bin: reader and writers",
		imports: formatImports, external: []string{float16}},
	{pkg: "model/gguf", concept: "the GGUF container: reader, writer, GGUF metadata to Config and Source",
		imports: formatImports, external: []string{float16}},
	{pkg: "model/safetensors", concept: "the safetensors container: validated header, mapped tensor views, writer",
		imports: []string{"model/mapfile"}},
	{pkg: "model/hf", concept: "Hugging Face directories: config.json, safetensors shards, generation_config.json",
		imports: append([]string{"model/safetensors"}, formatImports...), external: []string{float16}},
	{pkg: "model/checkpoint/stories260k", concept: "the built-in model: llama2.c's stories260K and its tokenizer, embedded (MIT)"},
	{pkg: "model/checkpoint", concept: "opens any checkpoint by magic or directory: its Source, tokenizer and generation settings",
		imports: append([]string{"model/llama2c", "model/gguf", "model/hf", "model/checkpoint/stories260k"}, formatImports...)},
	{pkg: "model/engine", concept: "the continuous-batching scheduler: admit, step, preempt, retire",
		imports: []string{"model", "model/tokenizer", "kvcache", "attention", "tensor", "tensor/kernels"}, external: []string{xSys}},
	{pkg: "model/engine/engineplot", concept: "the charts of the engine's measurements: infer compare's context sweep as PNG",
		imports: []string{"model/engine"}, external: []string{plot}},
	{pkg: "model/internal/formattest", concept: "test helper of the format packages: a generation through model/engine",
		imports: []string{"model", "model/engine"}},
	{pkg: "cuda", concept: "experimental: CUDA kernels for the attention paths and their memory-traffic simulation",
		imports: []string{"tensor", "kvcache", "attention"}},
	{pkg: "web/wasm/explain", concept: "the layout explorer's evaluator: a program in, infer layout's JSON rows plus picture facts out",
		imports: []string{"tensor/layoutexpr"}},
	// web/wasm builds only for GOOS=js GOARCH=wasm, so the host's package
	// list never has it: planned keeps its row without requiring it.
	{pkg: "web/wasm", concept: "the layout explorer's WebAssembly main (js/wasm only): installs strideLayout for the page",
		imports: []string{"web/wasm/explain"}, planned: true},
	{pkg: "web/explore", concept: "the layout explorer's server: builds the page (scripts/build-web.sh) into a folder it may write, and serves only the page's files"},
	{pkg: "web/kv", concept: "the KV cache page's static files (index.html, kv.js, kv.css), embedded with go:embed"},
	{pkg: "serve", concept: "the OpenAI-compatible HTTP server: an http.Handler over a Backend, and the Backend of the online engine",
		imports: []string{"model", "model/engine", "model/chat", "model/tokenizer", "web/kv"}, external: []string{prom}},
	{pkg: "serve/loadgen", concept: "`infer bench serve`: the vLLM-style serving benchmark client of any OpenAI-compatible server (arrivals, datasets, streamed measurements, metrics, reports), knowing no model"},
	{pkg: "serve/loadgen/loadplot", concept: "`infer bench serve --plot`'s chart: the latency CDFs per request rate and throughput against rate, as PNG",
		imports: []string{"serve/loadgen"}, external: []string{plot}},
	{pkg: "cmd/infer", concept: "the command line: generate, bench, compare, layout, trace, export",
		imports: []string{"*"}, external: []string{cobra, pflag, xSys, jinja},
		below: frontEndFloor, because: map[string]string{
			"attention": "infer trace runs one attention layer by itself (attention.TraceLayer): showing that layer's layout is the command",
			"cuda":      "infer coalesce drives the CUDA kernels and their traffic simulation, which no engine sits above",
		}},
	{pkg: "cmd/infer/...", concept: "the command line's internal helpers",
		imports: []string{"*"}, external: []string{cobra, pflag, xSys, jinja}},
	{pkg: "scripts/archcheck", concept: "this check: the import rules and the size report"},
}
