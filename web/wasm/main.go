//go:build js && wasm

// Command wasm is the layout explorer's evaluator: Stride's
// tensor/layoutexpr compiled to WebAssembly (GOOS=js GOARCH=wasm, the
// pure-Go kernels). It installs one JavaScript function,
//
//	strideLayout(program string) string
//
// whose result is the JSON text of an Explained value. Its Rows field is
// byte for byte what `infer layout --output json` prints for the same
// program, so the page's table and the command line cannot disagree; the
// other fields carry what the picture needs and the JSON rows leave out.
// scripts/build-web.sh builds it into web/dist/layout.wasm.
package main

import (
	"syscall/js"

	"github.com/stride-lm/stride/web/wasm/explain"
)

func main() {
	js.Global().Set("strideLayout", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 1 || args[0].Type() != js.TypeString {
			return `{"error":{"kind":"syntax","msg":"strideLayout wants one string"}}`
		}
		return string(explain.Explain(args[0].String()))
	}))
	// Tell the page the function exists, then keep the Go side alive:
	// returning from main would make every later call fail.
	if ready := js.Global().Get("strideLayoutReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}
