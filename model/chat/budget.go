package chat

import (
	"context"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// Budget bounds one rendering. The Jinja renderer has no limits of its
// own, so the template is instrumented when it is compiled (see
// instrument): loops, string-building operators, filters and printed
// values call back into a meter that checks each cap on the evaluated
// values before the work is done, and checks the context at every such
// step. A zero field takes defaultBudget's value.
type Budget struct {
	OutputBytes int // bytes the rendering may print
	Iterations  int // loop iterations, all loops together
	RangeLen    int // the longest range()
	StringBytes int // the longest string (or printed list) any step may build
}

// defaultBudget is generous for every real template (a conversation of
// megabytes renders in far less) and far below a memory problem.
var defaultBudget = Budget{OutputBytes: 64 << 20, Iterations: 1 << 20, RangeLen: 1 << 16, StringBytes: 32 << 20}

// withDefaults fills b's zero fields from defaultBudget.
func (b Budget) withDefaults() Budget {
	d := defaultBudget
	if b.OutputBytes > 0 {
		d.OutputBytes = b.OutputBytes
	}
	if b.Iterations > 0 {
		d.Iterations = b.Iterations
	}
	if b.RangeLen > 0 {
		d.RangeLen = b.RangeLen
	}
	if b.StringBytes > 0 {
		d.StringBytes = b.StringBytes
	}
	return d
}

// compile compiles src and instruments it for the meter.
func compile(src string) (*jinja.Template, error) {
	tpl, err := jinja.Compile(src)
	if err != nil {
		return nil, err
	}
	if err := instrument(tpl); err != nil {
		return nil, err
	}
	return tpl, nil
}

// runBudgeted renders tpl with data under b, stopping with ctx. A panic
// inside the renderer (it has some, e.g. a negative repetition count)
// becomes an error.
func runBudgeted(ctx context.Context, tpl *jinja.Template, data map[string]jinja.Value, b Budget) (out string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("rendering failed: %v", r)
		}
	}()
	m := &meter{ctx: ctx, b: b}
	for k, v := range m.data() {
		data[k] = v
	}
	return tpl.RenderValues(data)
}
