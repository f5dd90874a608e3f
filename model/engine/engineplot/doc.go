// Package engineplot draws the engine's measurements as charts: the
// context sweep of `infer compare --contexts --plot`, the naive and the
// fused attention path side by side.
//
// The charts live apart from package engine so that the engine, which
// every front end imports, does not pull in gonum/plot and its fonts;
// a front end that draws imports this package as well. Each function
// draws from the engine's report types (engine.ComparePoint) and returns
// the picture as an io.WriterTo, so a drawing error and a writing error
// come apart: the caller knows which of the two went wrong and where it
// was writing.
package engineplot
