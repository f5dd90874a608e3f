package chat

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/ardanlabs/jinja"
)

// ardanlabs/jinja offers no hooks: no context, no limits, its tree
// unexported. instrument rewrites that tree once, when the template is
// compiled, so that the steps that can take time or memory call into the
// meter (meter.go) first:
//
//   - `a * b` becomes __stride_mul(a, b): the repetition's size is
//     checked before strings.Repeat runs;
//   - the operands of `+` and `~`, the input of every filter, the
//     receiver of every method call, and the results of calls and filters
//     pass through __stride_sized, which checks their size;
//   - `s.replace(a, b)`, `s.format(…)` and `s.split(…)` become
//     __stride_replace(s, a, b), __stride_format(s, …) and
//     __stride_split(s, …), sized exactly before they run;
//   - `{% for x in it %}` iterates __stride_loop(it, text): the loop's
//     length counts against the iteration cap, and its body's literal
//     text times that length against the output cap;
//   - `{{ e }}` prints __stride_out(e), which counts the printed bytes.
//
// range() is replaced through the render's data, which shadows the
// builtins, and the amplifying filters (join, replace, indent, map,
// tojson, list) are
// renamed to the meter's. Each
// callback also checks the context, so a cancelled render stops at its
// next step. The rewrite depends on the library's tree shapes (v1.8.0);
// TestInstrumentFindsEveryHook fails if they change.
func instrument(tpl *jinja.Template) error {
	sh, err := treeShapes()
	if err != nil {
		return err
	}
	nodes := settable(reflect.ValueOf(tpl).Elem().FieldByName("nodes"))
	if sh.nestedFilterBlocks(nodes, false) {
		return errors.New("a {% filter %} block inside another: the library applies their filters unmetered, and nested ones could multiply their text without bound")
	}
	sh.rewrite(nodes)
	return nil
}

// nestedFilterBlocks reports whether v holds a filter block within a
// filter block (in is whether v is inside one).
func (sh *shapes) nestedFilterBlocks(v reflect.Value, in bool) bool {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return false
		}
		p := v.Elem()
		if p.Type() == sh.filterBlock {
			if in {
				return true
			}
			in = true
		}
		if p.Kind() == reflect.Ptr && p.Elem().Kind() == reflect.Struct {
			return sh.nestedFilterBlocks(p.Elem(), in)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if sh.nestedFilterBlocks(v.Index(i), in) {
				return true
			}
		}
	case reflect.Struct:
		if v.Type() == sh.value {
			return false
		}
		for i := 0; i < v.NumField(); i++ {
			if sh.nestedFilterBlocks(v.Field(i), in) {
				return true
			}
		}
	}
	return false
}

// meteredFilters are the filters that can multiply their input, which
// the meter runs with their result's size checked first.
var meteredFilters = map[string]bool{"replace": true, "join": true, "indent": true, "map": true, "tojson": true, "list": true}

// shapes are the library's node types, taken from a compiled probe.
type shapes struct {
	call, name, lit, bin, filter, output, forLoop, text, attr reflect.Type
	filterBlock, value                                        reflect.Type
}

var (
	shapesOnce sync.Once
	shapesVal  *shapes
	shapesErr  error
)

// probeSource holds one node of each type instrument touches.
const probeSource = "{% for x in y %}t{% endfor %}{{ f(1) * a.b | g }}{% filter upper %}u{% endfilter %}"

// treeShapes reads the node types off a compiled probe template.
func treeShapes() (*shapes, error) {
	shapesOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				shapesErr = fmt.Errorf("chat: the Jinja library's tree is not the shape this package instruments: %v", r)
			}
		}()
		tpl, err := jinja.Compile(probeSource)
		if err != nil {
			shapesErr = err
			return
		}
		nodes := reflect.ValueOf(tpl).Elem().FieldByName("nodes")
		loop := nodes.Index(0).Elem()
		out := nodes.Index(1).Elem()
		bin := out.Elem().FieldByName("expression").Elem()      // f(1) * (a.b | g)
		call := bin.Elem().FieldByName("left").Elem()           // f(1)
		filter := bin.Elem().FieldByName("right").Elem()        // a.b | g
		attr := filter.Elem().FieldByName("expr").Elem()        // a.b
		text := loop.Elem().FieldByName("body").Index(0).Elem() // t
		s := &shapes{call: call.Type(), name: call.Elem().FieldByName("fn").Elem().Type(),
			lit: call.Elem().FieldByName("args").Index(0).Elem().Type(), bin: bin.Type(),
			filter: filter.Type(), output: out.Type(), forLoop: loop.Type(), text: text.Type(),
			attr: attr.Type(), filterBlock: nodes.Index(2).Elem().Type(), value: reflect.TypeOf(jinja.Value{})}
		if s.bin.Elem().Name() != "binExpr" || s.forLoop.Elem().Name() != "forNode" || s.attr.Elem().Name() != "attrExpr" {
			panic("unexpected node types " + s.bin.String() + ", " + s.forLoop.String())
		}
		shapesVal = s
	})
	return shapesVal, shapesErr
}

// settable is v (a field reached through unexported names) made
// writable.
func settable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// field is p's (a node pointer's) field name, writable.
func field(p reflect.Value, name string) reflect.Value {
	return settable(p.Elem().FieldByName(name))
}

// rewrite walks v (writable) depth first and replaces or edits each node
// as instrument says; replacements are not walked again.
func (sh *shapes) rewrite(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		p := v.Elem()
		if p.Kind() == reflect.Ptr && !p.IsNil() {
			sh.walkFields(p)
			if r, ok := sh.transform(p); ok {
				v.Set(r)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			sh.rewrite(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == sh.value {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			sh.rewrite(settable(v.Field(i)))
		}
	}
}

// walkFields rewrites the fields of the node p points to.
func (sh *shapes) walkFields(p reflect.Value) {
	e := p.Elem()
	if e.Kind() != reflect.Struct || e.Type() == sh.value {
		return
	}
	for i := 0; i < e.NumField(); i++ {
		sh.rewrite(settable(e.Field(i)))
	}
}

// transform edits node p in place, or returns its replacement.
func (sh *shapes) transform(p reflect.Value) (reflect.Value, bool) {
	switch p.Type() {
	case sh.bin:
		switch field(p, "op").String() {
		case "*":
			return sh.callOf("__stride_mul", field(p, "left"), field(p, "right")), true
		case "+", "~":
			sh.wrap(field(p, "left"), "__stride_sized")
			sh.wrap(field(p, "right"), "__stride_sized")
		}
	case sh.filter:
		// The library looks a filter up among its builtins first and in
		// the data second: a renamed filter reaches the meter's.
		if name := field(p, "name"); meteredFilters[name.String()] {
			if n := name.String(); n == "replace" {
				name.SetString("__stride_replace_filter")
			} else {
				name.SetString("__stride_" + n)
			}
		}
		sh.wrap(field(p, "expr"), "__stride_sized")
		return sh.callOf("__stride_sized", p), true
	case sh.call:
		fn := field(p, "fn")
		if !fn.IsNil() && fn.Elem().Type() == sh.attr {
			obj := field(fn.Elem(), "obj")
			if attr := field(fn.Elem(), "attr").String(); attr == "replace" || attr == "format" || attr == "split" {
				args := field(p, "args")
				vals := []reflect.Value{obj}
				for i := 0; i < args.Len(); i++ {
					vals = append(vals, args.Index(i))
				}
				return sh.callOf("__stride_"+attr, vals...), true
			}
			sh.wrap(obj, "__stride_sized")
		}
		return sh.callOf("__stride_sized", p), true
	case sh.output:
		sh.wrap(field(p, "expression"), "__stride_out")
	case sh.forLoop:
		text := sh.textBytes(field(p, "body"))
		iter := field(p, "iter")
		iter.Set(sh.callOf("__stride_loop", iter, sh.litOf(jinja.NewInt(int64(text)))))
	}
	return reflect.Value{}, false
}

// wrap replaces expression slot e by name(e).
func (sh *shapes) wrap(e reflect.Value, name string) {
	if !e.IsNil() {
		e.Set(sh.callOf(name, e))
	}
}

// callOf builds the call expression name(args...).
func (sh *shapes) callOf(name string, args ...reflect.Value) reflect.Value {
	c := reflect.New(sh.call.Elem())
	n := reflect.New(sh.name.Elem())
	field(n, "name").SetString(name)
	field(c, "fn").Set(n)
	list := field(c, "args")
	for _, a := range args {
		if a.Kind() == reflect.Interface {
			a = a.Elem()
		}
		list.Set(reflect.Append(list, a))
	}
	return c
}

// litOf builds the literal expression of v.
func (sh *shapes) litOf(v jinja.Value) reflect.Value {
	l := reflect.New(sh.lit.Elem())
	field(l, "val").Set(reflect.ValueOf(v))
	return l
}

// textBytes is the literal text of a loop body, nested loops' bodies
// excepted (their own loop counts them): an upper bound on what one
// iteration prints besides its {{ }} values.
func (sh *shapes) textBytes(body reflect.Value) int {
	n := 0
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface:
			if v.IsNil() {
				return
			}
			p := v.Elem()
			switch p.Type() {
			case sh.text:
				n += len(p.Elem().FieldByName("text").String())
			case sh.forLoop:
			default:
				if p.Kind() == reflect.Ptr && p.Elem().Kind() == reflect.Struct {
					walk(p.Elem())
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Struct:
			if v.Type() == sh.value {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		}
	}
	walk(body)
	return n
}
