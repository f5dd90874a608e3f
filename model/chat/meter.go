package chat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// meter is one rendering's account against its Budget; its methods are
// the callbacks instrument wires into the template.
type meter struct {
	ctx               context.Context
	b                 Budget
	out, iterations   int
	origJoin, origInd jinja.Value
}

// errCap names the cap a template hit.
func errCap(what string, got, limit int, field string) error {
	return fmt.Errorf("%s %d is over the cap of %d (Budget.%s)", what, got, limit, field)
}

// data returns the meter's callbacks, under the names instrument uses
// and the builtins they shadow.
func (m *meter) data() map[string]jinja.Value {
	return map[string]jinja.Value{
		"__stride_mul":            jinja.NewCallable("__stride_mul", m.mul),
		"__stride_sized":          jinja.NewCallable("__stride_sized", m.sized),
		"__stride_replace":        jinja.NewCallable("__stride_replace", m.replaceMethod),
		"__stride_loop":           jinja.NewCallable("__stride_loop", m.loop),
		"__stride_out":            jinja.NewCallable("__stride_out", m.print),
		"range":                   jinja.NewCallable("range", m.rangeOf),
		"__stride_replace_filter": jinja.NewCallable("replace", m.replaceFilter),
		"__stride_join":           jinja.NewCallable("join", m.join),
		"__stride_indent":         jinja.NewCallable("indent", m.indent),
		"__stride_map":            jinja.NewCallable("map", m.mapFilter),
		"__stride_format":         jinja.NewCallable("__stride_format", m.formatMethod),
		"__stride_split":          jinja.NewCallable("__stride_split", m.splitMethod),
		"__stride_list":           jinja.NewCallable("list", m.list),
		"__stride_tojson":         jinja.NewCallable("tojson", m.tojson),
	}
}

// step checks the context: every callback starts with it.
func (m *meter) step() error { return m.ctx.Err() }

// itemBytes is what one list or dict item weighs beside its value: its
// separators when printed, and about what it takes in memory, so that a
// list of small values cannot grow far past the cap in memory either.
const itemBytes = 16

// size is v's printed size (an upper bound for lists and dicts), counted
// no further than past limit.
func size(v jinja.Value, limit int) int {
	switch {
	case v.IsString():
		return len(v.AsString())
	case v.IsList():
		n := 2
		for _, it := range v.AsList().Items {
			if n += size(it, limit-n) + itemBytes; n > limit {
				return n
			}
		}
		return n
	case v.IsDict():
		d := v.AsDict()
		n := 2
		for _, k := range d.OrderedKeys() {
			it, _ := d.Get(k)
			if n += len(k) + size(it, limit-n) + itemBytes; n > limit {
				return n
			}
		}
		return n
	}
	return len(printed(v))
}

// sized refuses a value larger than the string cap.
func (m *meter) sized(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	if n := size(args[0], m.b.StringBytes); n > m.b.StringBytes {
		return jinja.Undefined(), errCap("a value of at least", n, m.b.StringBytes, "StringBytes")
	}
	return args[0], nil
}

// print counts what {{ }} prints against the output cap.
func (m *meter) print(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	v, err := m.sized(args, kw)
	if err != nil {
		return v, err
	}
	if m.out += size(v, m.b.StringBytes); m.out > m.b.OutputBytes {
		return jinja.Undefined(), errCap("output of at least", m.out, m.b.OutputBytes, "OutputBytes")
	}
	return v, nil
}

// loop counts a loop's iterations, and its body's literal text for each,
// before the loop runs.
func (m *meter) loop(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	it, text := args[0], int(args[1].AsInt())
	n := 0
	switch {
	case it.IsList():
		n = it.AsList().Len()
	case it.IsDict():
		n = it.AsDict().Len()
	case it.IsString():
		n = utf8.RuneCountInString(it.AsString())
	}
	if m.iterations += n; m.iterations > m.b.Iterations {
		return jinja.Undefined(), errCap("loop iterations", m.iterations, m.b.Iterations, "Iterations")
	}
	if m.out += n * text; m.out > m.b.OutputBytes {
		return jinja.Undefined(), errCap("output of at least", m.out, m.b.OutputBytes, "OutputBytes")
	}
	return it, nil
}

// rangeOf is range() with its length checked before the list is built.
func (m *meter) rangeOf(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	var start, stop, step int64 = 0, 0, 1
	switch len(args) {
	case 1:
		stop = toInt(args[0])
	case 2, 3:
		start, stop = toInt(args[0]), toInt(args[1])
		if len(args) == 3 {
			step = toInt(args[2])
		}
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1-3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		n = (start - stop - step - 1) / -step
	}
	if n < 0 || n > int64(m.b.RangeLen) { // n < 0: the subtraction overflowed
		return jinja.Undefined(), fmt.Errorf("range(%d, %d, %d) is over the cap of %d items (Budget.RangeLen)", start, stop, step, m.b.RangeLen)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// mul is the library's `*` (string repetition, else arithmetic), with
// the repetition's size checked before it is built.
func (m *meter) mul(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	a, b := args[0], args[1]
	switch {
	case a.IsString() && b.IsInt():
		n := max(b.AsInt(), 0)
		if l := int64(len(a.AsString())); l > 0 && n > int64(m.b.StringBytes)/l {
			return jinja.Undefined(), fmt.Errorf("string repetition %d × %d bytes is over the cap of %d bytes (Budget.StringBytes)", n, l, m.b.StringBytes)
		}
		return jinja.NewString(strings.Repeat(a.AsString(), int(n))), nil
	case a.IsFloat() || b.IsFloat():
		return jinja.NewFloat(toFloat(a) * toFloat(b)), nil
	}
	return jinja.NewInt(toInt(a) * toInt(b)), nil
}

// replaced is the size of s with old replaced by new (count < 0: all).
func replaced(s, old, new string, count int) int {
	n := strings.Count(s, old)
	if count >= 0 {
		n = min(n, count)
	}
	return len(s) + n*(len(new)-len(old))
}

// checkReplace refuses a replacement whose result would pass the cap.
func (m *meter) checkReplace(s, old, new string, count int) error {
	if err := m.step(); err != nil {
		return err
	}
	if count != 0 && len(new) > len(old) {
		if got := replaced(s, old, new, count); got > m.b.StringBytes {
			return errCap("replace() result of", got, m.b.StringBytes, "StringBytes")
		}
	}
	return nil
}

// replaceMethod is s.replace(old, new[, count]) as the library runs it.
func (m *meter) replaceMethod(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if !args[0].IsString() {
		return jinja.Undefined(), fmt.Errorf("replace() called on a value that is not a string")
	}
	s := args[0].AsString()
	if len(args) < 3 {
		return jinja.NewString(s), nil
	}
	old, new, count := printed(args[1]), printed(args[2]), -1
	if len(args) > 3 {
		count = int(toInt(args[3]))
	}
	if err := m.checkReplace(s, old, new, count); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(strings.Replace(s, old, new, count)), nil
}

// formatMethod is s.format(args...) as the library runs it: each
// argument replaces every "{i}" and the first "{}", each step sized
// before it runs.
func (m *meter) formatMethod(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if !args[0].IsString() {
		return jinja.Undefined(), fmt.Errorf("format() called on a value that is not a string")
	}
	s := args[0].AsString()
	for i, a := range args[1:] {
		p, ph := printed(a), fmt.Sprintf("{%d}", i)
		if err := m.checkReplace(s, ph, p, -1); err != nil {
			return jinja.Undefined(), err
		}
		s = strings.ReplaceAll(s, ph, p)
		if err := m.checkReplace(s, "{}", p, 1); err != nil {
			return jinja.Undefined(), err
		}
		s = strings.Replace(s, "{}", p, 1)
	}
	return jinja.NewString(s), nil
}

// checkItems refuses building a list of n items past the string cap (a
// list's items weigh itemBytes each).
func (m *meter) checkItems(what string, n int) error {
	if err := m.step(); err != nil {
		return err
	}
	if n > m.b.StringBytes/itemBytes {
		return fmt.Errorf("%s of %d items is over the cap of %d bytes at %d bytes an item (Budget.StringBytes)", what, n, m.b.StringBytes, itemBytes)
	}
	return nil
}

// splitMethod is s.split([sep]) as the library runs it, its part count
// checked first.
func (m *meter) splitMethod(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if !args[0].IsString() {
		return jinja.Undefined(), fmt.Errorf("split() called on a value that is not a string")
	}
	s := args[0].AsString()
	var parts []string
	if len(args) == 1 {
		parts = strings.Fields(s) // at most half as many parts as bytes
		if err := m.checkItems("split()", len(parts)); err != nil {
			return jinja.Undefined(), err
		}
	} else {
		sep := printed(args[1])
		n := strings.Count(s, sep) + 1
		if sep == "" {
			n = utf8.RuneCountInString(s)
		}
		if err := m.checkItems("split()", n); err != nil {
			return jinja.Undefined(), err
		}
		parts = strings.Split(s, sep)
	}
	items := make([]jinja.Value, len(parts))
	for i, p := range parts {
		items[i] = jinja.NewString(p)
	}
	return jinja.NewList(items), nil
}

// list is the list filter, a string's character count checked first.
func (m *meter) list(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) > 0 && args[0].IsString() {
		if err := m.checkItems("list", utf8.RuneCountInString(args[0].AsString())); err != nil {
			return jinja.Undefined(), err
		}
	}
	return builtin("list").Fn(args, kw)
}

// tojson is the tojson filter with a bound on its result checked first:
// escaping grows a string at most 6 times, and each item adds its
// separators and, indented, a line of depth × indent spaces.
func (m *meter) tojson(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	if len(args) > 0 {
		items, depth := shape(args[0], 0, m.b.StringBytes)
		per := int64(4)
		if seps, ok := kw["separators"]; ok {
			per += int64(size(seps, m.b.StringBytes))
		}
		if ind, ok := kw["indent"]; ok && !ind.IsNone() && !ind.IsUndefined() {
			n := toInt(ind)
			if n < 0 || n > int64(m.b.StringBytes) {
				return jinja.Undefined(), fmt.Errorf("tojson indent %d is over the cap of %d bytes (Budget.StringBytes)", n, m.b.StringBytes)
			}
			per += 1 + int64(depth)*n
		}
		bound := 6*int64(size(args[0], m.b.StringBytes)) + int64(items+1)*per
		if bound > int64(m.b.StringBytes) {
			return jinja.Undefined(), fmt.Errorf("tojson() result of up to %d bytes is over the cap of %d bytes (Budget.StringBytes)", bound, m.b.StringBytes)
		}
	}
	return builtin("tojson").Fn(args, kw)
}

// shape counts v's list and dict items and its nesting depth, stopping
// once the count passes limit.
func shape(v jinja.Value, depth, limit int) (items, maxDepth int) {
	maxDepth = depth
	visit := func(it jinja.Value) {
		n, d := shape(it, depth+1, limit-items)
		items += n + 1
		maxDepth = max(maxDepth, d)
	}
	switch {
	case v.IsList():
		for _, it := range v.AsList().Items {
			if visit(it); items > limit {
				break
			}
		}
	case v.IsDict():
		d := v.AsDict()
		for _, k := range d.OrderedKeys() {
			it, _ := d.Get(k)
			if visit(it); items > limit {
				break
			}
		}
	}
	return items, maxDepth
}

// replaceFilter is the replace filter with its result's size checked.
func (m *meter) replaceFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) >= 3 {
		count := -1
		if len(args) > 3 {
			count = int(toInt(args[3]))
		}
		if c, ok := kw["count"]; ok {
			count = int(toInt(c))
		}
		if err := m.checkReplace(printed(args[0]), printed(args[1]), printed(args[2]), count); err != nil {
			return jinja.Undefined(), err
		}
	}
	return builtin("replace").Fn(args, kw)
}

// join is the join filter with its result's size checked.
func (m *meter) join(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	if len(args) > 0 && args[0].IsList() {
		sep := ""
		if len(args) > 1 {
			sep = printed(args[1])
		}
		if d, ok := kw["d"]; ok {
			sep = printed(d)
		}
		n := size(args[0], m.b.StringBytes) + args[0].AsList().Len()*len(sep)
		if n > m.b.StringBytes {
			return jinja.Undefined(), errCap("join() result of at least", n, m.b.StringBytes, "StringBytes")
		}
	}
	return builtin("join").Fn(args, kw)
}

// indent is the indent filter with its result's size checked.
func (m *meter) indent(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	if len(args) > 0 {
		width := int64(4)
		if len(args) > 1 {
			width = toInt(args[1])
		}
		if w, ok := kw["width"]; ok {
			width = toInt(w)
		}
		s := printed(args[0])
		lines := int64(strings.Count(s, "\n") + 1)
		if width < 0 || width > int64(m.b.StringBytes)/lines {
			return jinja.Undefined(), fmt.Errorf("indent width %d over %d lines is over the cap of %d bytes (Budget.StringBytes)", width, lines, m.b.StringBytes)
		}
	}
	return builtin("indent").Fn(args, kw)
}

// mapFilter is the map filter, refusing to map a filter that can
// multiply its input (the meter could not size each result).
func (m *meter) mapFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if err := m.step(); err != nil {
		return jinja.Undefined(), err
	}
	if len(args) > 1 && args[1].IsString() && meteredFilters[args[1].AsString()] {
		return jinja.Undefined(), fmt.Errorf("map(%q) is not allowed: the filter can multiply its input, which a budget cannot size per item", args[1].AsString())
	}
	return builtin("map").Fn(args, kw)
}

var (
	builtinsOnce sync.Once
	builtinFns   map[string]*jinja.Callable
)

// builtin is the library's own filter name, read once off a render
// (the builtins are reachable only from inside a template).
func builtin(name string) *jinja.Callable {
	builtinsOnce.Do(func() {
		builtinFns = map[string]*jinja.Callable{}
		grab := jinja.NewCallable("grab", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			for _, a := range args {
				c := a.AsCallable()
				builtinFns[c.Name] = c
			}
			return jinja.NewString(""), nil
		})
		tpl, err := jinja.Compile("{{ grab(__filter_replace, __filter_join, __filter_indent, __filter_map, __filter_tojson, __filter_list) }}")
		if err == nil {
			_, err = tpl.RenderValues(map[string]jinja.Value{"grab": grab})
		}
		if err != nil {
			panic("chat: reading the Jinja builtins: " + err.Error())
		}
	})
	return builtinFns[name]
}

// printed is v as the library prints it.
func printed(v jinja.Value) string {
	switch {
	case v.IsUndefined(), v.IsNone():
		return ""
	case v.IsBool():
		if v.AsBool() {
			return "True"
		}
		return "False"
	case v.IsString():
		return v.AsString()
	}
	return v.String()
}

// toInt and toFloat are the library's number conversions.
func toInt(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
		return 0
	case v.IsString():
		var n int64
		fmt.Sscanf(v.AsString(), "%d", &n)
		return n
	}
	return 0
}

func toFloat(v jinja.Value) float64 {
	switch {
	case v.IsFloat():
		return v.AsFloat()
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsString():
		var f float64
		fmt.Sscanf(v.AsString(), "%f", &f)
		return f
	}
	return float64(toInt(v))
}
