package configs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a key's value.
type Kind int

// The kinds of value a key may hold.
const (
	String   Kind = iota // any string (see Key.Allowed)
	Path                 // a file path; relative paths in a config file are resolved against its folder
	Int                  // an integer
	Float                // a number
	Bool                 // true/false
	Duration             // a Go duration string: "500ms", "2s"
	Strings              // one string or a list of strings (a YAML list, or a repeated flag)
)

// String names the kind as error messages and the key reference do:
// "an integer", "a duration".
func (k Kind) String() string {
	names := [...]string{"a string", "a path", "an integer", "a number", "a boolean", "a duration", "a string or a list of strings"}
	if k < String || k > Strings {
		return fmt.Sprintf("kind %d", int(k))
	}
	return names[k]
}

// Key describes one setting. Name is dotted and lower-case: a flat key
// ("steps") is a top-level YAML key, "trace.batch" is batch under a
// trace: section. Its environment variable is EnvName(Name): INFER_ + the
// name upper-cased with '.' and '-' replaced by '_' (INFER_TRACE_BATCH).
type Key struct {
	Name    string
	Kind    Kind
	Default any      // string, int, float64, bool, time.Duration or []string per Kind; nil = zero
	Allowed []string // for String: the accepted values (nil = any)
	Range   *Bounds  // for Int and Float: the accepted values (nil = any finite number)
	Help    string
	// Secret keeps the value out of every error about the key (an API
	// key written where a list belongs must not be echoed).
	Secret bool
}

// Bounds is a numeric key's accepted interval. Lo and Hi are inclusive
// unless LoOpen; ±Inf leaves a side unbounded. Every float key also
// rejects NaN and ±Inf, which no setting means.
type Bounds struct {
	Lo, Hi float64
	LoOpen bool
}

// AtLeast accepts lo and above: [lo, ∞).
func AtLeast(lo float64) *Bounds { return &Bounds{Lo: lo, Hi: math.Inf(1)} }

// InRange accepts [lo, hi].
func InRange(lo, hi float64) *Bounds { return &Bounds{Lo: lo, Hi: hi} }

// Above accepts (lo, ∞).
func Above(lo float64) *Bounds { return &Bounds{Lo: lo, Hi: math.Inf(1), LoOpen: true} }

// String writes the interval as the error messages and --help show it:
// "≥ 0", "> 0" or "in [0, 1]".
func (b *Bounds) String() string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case math.IsInf(b.Hi, 1) && b.LoOpen:
		return "> " + num(b.Lo)
	case math.IsInf(b.Hi, 1):
		return "≥ " + num(b.Lo)
	}
	return "in [" + num(b.Lo) + ", " + num(b.Hi) + "]"
}

func (b *Bounds) contains(f float64) bool {
	if b.LoOpen && f <= b.Lo || f < b.Lo {
		return false
	}
	return f <= b.Hi
}

// checkNumber rejects NaN, ±Inf and values outside k.Range.
func (k Key) checkNumber(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v is not a finite number", f)
	}
	if k.Range != nil && !k.Range.contains(f) {
		return fmt.Errorf("must be %v (got %v)", k.Range, f)
	}
	return nil
}

// EnvPrefix starts the name of every environment variable that sets a
// key.
const EnvPrefix = "INFER"

var envReplacer = strings.NewReplacer(".", "_", "-", "_")

// EnvName returns the environment variable that sets key:
// "layout.output" → INFER_LAYOUT_OUTPUT, "kv-dtype" → INFER_KV_DTYPE.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(envReplacer.Replace(key))
}

// DefaultValue returns the key's default, or the zero value of its kind
// (an empty list for Strings).
func (k Key) DefaultValue() any {
	if k.Default != nil {
		return k.Default
	}
	switch k.Kind {
	case Int:
		return 0
	case Float:
		return 0.0
	case Bool:
		return false
	case Duration:
		return time.Duration(0)
	case Strings:
		return []string{}
	}
	return ""
}

// validate checks a key declaration (a programming error if it fails;
// reported when the program runs rather than by a panic in init).
func (k Key) validate() error {
	if k.Name == "" || strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyz0123456789_-.") != "" ||
		strings.HasPrefix(k.Name, ".") || strings.HasSuffix(k.Name, ".") || strings.Contains(k.Name, "..") {
		return fmt.Errorf("config key %q: names are lower-case words separated by dots", k.Name)
	}
	if k.Kind < String || k.Kind > Strings {
		return fmt.Errorf("config key %q: unknown kind %d", k.Name, k.Kind)
	}
	// The default must have the kind's Go type exactly: it also becomes
	// the typed flag's default.
	def := k.DefaultValue()
	var ok bool
	switch k.Kind {
	case Int:
		_, ok = def.(int)
	case Float:
		_, ok = def.(float64)
	case Bool:
		_, ok = def.(bool)
	case Duration:
		_, ok = def.(time.Duration)
	case Strings:
		_, ok = def.([]string)
	default:
		_, ok = def.(string)
	}
	if !ok {
		return fmt.Errorf("config key %q: default %#v is not %v (want a Go %T)", k.Name, def, k.Kind, Key{Kind: k.Kind}.DefaultValue())
	}
	if err := k.check(def); err != nil {
		return fmt.Errorf("config key %q: default: %v", k.Name, err)
	}
	return nil
}

// check reports whether v is a valid value for k. Values from the
// environment arrive as strings, so numbers, booleans and durations may be
// strings that parse; a YAML value must have the kind's type (a list or a
// section where a number belongs is an error).
func (k Key) check(v any) error {
	err := k.checkValue(v)
	if err != nil && k.Secret {
		return fmt.Errorf("want %v (the value is secret, so it is not shown)", k.Kind)
	}
	return err
}

func (k Key) checkValue(v any) error {
	switch k.Kind {
	case String, Path:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want %v, got %s", k.Kind, describe(v))
		}
		if len(k.Allowed) > 0 && !contains(k.Allowed, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(k.Allowed, ", "))
		}
		return nil
	case Int:
		n, err := toInt(v)
		if err != nil {
			return err
		}
		return k.checkNumber(float64(n))
	case Float:
		f, err := toFloat(v)
		if err != nil {
			return err
		}
		return k.checkNumber(f)
	case Bool:
		_, err := toBool(v)
		return err
	case Duration:
		_, err := toDuration(v)
		return err
	case Strings:
		_, err := toStrings(v)
		return err
	}
	return fmt.Errorf("unknown kind %d", k.Kind)
}
