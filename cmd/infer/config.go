package main

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// This file holds the configuration keys: how a subcommand declares the
// settings it reads, and how a value is checked, whichever of the four
// sources it came from (flag > INFER_* env > --config YAML file > default).

// kind is the type of a config key's value.
type kind int

const (
	kindString   kind = iota // any string (see configKey.Allowed)
	kindPath                 // a file path; relative paths in a config file are resolved against its folder
	kindInt                  // an integer
	kindFloat                // a number
	kindBool                 // true/false
	kindDuration             // a Go duration string: "500ms", "2s"
	kindStrings              // one string or a list of strings (a YAML list, or a repeated flag)
)

func (k kind) String() string {
	return [...]string{"a string", "a path", "an integer", "a number", "a boolean", "a duration", "a string or a list of strings"}[k]
}

// configKey describes one setting. Name is dotted and lower-case: a flat
// key ("steps") is a top-level YAML key, "trace.batch" is batch under a
// trace: section. Its environment variable is INFER_ + the name upper-
// cased with '.' and '-' replaced by '_' (INFER_TRACE_BATCH).
type configKey struct {
	Name    string
	Kind    kind
	Default any      // string, int, float64, bool or time.Duration per Kind; nil = zero
	Allowed []string // for kindString: the accepted values (nil = any)
	Range   *bounds  // for kindInt and kindFloat: the accepted values (nil = any finite number)
	Help    string
	// Secret keeps the value out of every error about the key (an API
	// key written where a list belongs must not be echoed).
	Secret bool
}

// bounds is a numeric key's accepted interval. Lo and Hi are inclusive
// unless LoOpen; ±Inf leaves a side unbounded. Every float key also
// rejects NaN and ±Inf, which no setting means.
type bounds struct {
	Lo, Hi float64
	LoOpen bool
}

// atLeast accepts lo and above; inRange accepts [lo, hi]; above accepts
// (lo, ∞).
func atLeast(lo float64) *bounds     { return &bounds{Lo: lo, Hi: math.Inf(1)} }
func inRange(lo, hi float64) *bounds { return &bounds{Lo: lo, Hi: hi} }
func above(lo float64) *bounds       { return &bounds{Lo: lo, Hi: math.Inf(1), LoOpen: true} }

// String writes the interval as the error messages and --help show it:
// "≥ 0", "> 0" or "in [0, 1]".
func (b *bounds) String() string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case math.IsInf(b.Hi, 1) && b.LoOpen:
		return "> " + num(b.Lo)
	case math.IsInf(b.Hi, 1):
		return "≥ " + num(b.Lo)
	}
	return "in [" + num(b.Lo) + ", " + num(b.Hi) + "]"
}

func (b *bounds) contains(f float64) bool {
	if b.LoOpen && f <= b.Lo || f < b.Lo {
		return false
	}
	return f <= b.Hi
}

// checkNumber rejects NaN, ±Inf and values outside k.Range.
func (k configKey) checkNumber(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v is not a finite number", f)
	}
	if k.Range != nil && !k.Range.contains(f) {
		return fmt.Errorf("must be %v (got %v)", k.Range, f)
	}
	return nil
}

// envName returns the environment variable that sets key.
func envName(key string) string {
	return envPrefix + "_" + strings.ToUpper(envReplacer.Replace(key))
}

const envPrefix = "INFER"

var envReplacer = strings.NewReplacer(".", "_", "-", "_")

// defaultValue returns the key's default, or the zero value of its kind.
func (k configKey) defaultValue() any {
	if k.Default != nil {
		return k.Default
	}
	switch k.Kind {
	case kindInt:
		return 0
	case kindFloat:
		return 0.0
	case kindBool:
		return false
	case kindDuration:
		return time.Duration(0)
	case kindStrings:
		return []string{}
	}
	return ""
}

// validate checks a key declaration (a programming error if it fails;
// reported when the CLI runs rather than by a panic in init).
func (k configKey) validate() error {
	if k.Name == "" || strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyz0123456789_-.") != "" ||
		strings.HasPrefix(k.Name, ".") || strings.HasSuffix(k.Name, ".") || strings.Contains(k.Name, "..") {
		return fmt.Errorf("config key %q: names are lower-case words separated by dots", k.Name)
	}
	if k.Kind < kindString || k.Kind > kindStrings {
		return fmt.Errorf("config key %q: unknown kind %d", k.Name, k.Kind)
	}
	// The default must have the kind's Go type exactly: it also becomes
	// the typed flag's default.
	def := k.defaultValue()
	var ok bool
	switch k.Kind {
	case kindInt:
		_, ok = def.(int)
	case kindFloat:
		_, ok = def.(float64)
	case kindBool:
		_, ok = def.(bool)
	case kindDuration:
		_, ok = def.(time.Duration)
	case kindStrings:
		_, ok = def.([]string)
	default:
		_, ok = def.(string)
	}
	if !ok {
		return fmt.Errorf("config key %q: default %#v is not %v (want a Go %T)", k.Name, def, k.Kind, configKey{Kind: k.Kind}.defaultValue())
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
func (k configKey) check(v any) error {
	err := k.checkValue(v)
	if err != nil && k.Secret {
		return fmt.Errorf("want %v (the value is secret, so it is not shown)", k.Kind)
	}
	return err
}

func (k configKey) checkValue(v any) error {
	switch k.Kind {
	case kindString, kindPath:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want %v, got %s", k.Kind, describe(v))
		}
		if len(k.Allowed) > 0 && !contains(k.Allowed, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(k.Allowed, ", "))
		}
		return nil
	case kindInt:
		n, err := toInt(v)
		if err != nil {
			return err
		}
		return k.checkNumber(float64(n))
	case kindFloat:
		f, err := toFloat(v)
		if err != nil {
			return err
		}
		return k.checkNumber(f)
	case kindBool:
		_, err := toBool(v)
		return err
	case kindDuration:
		_, err := toDuration(v)
		return err
	case kindStrings:
		_, err := toStrings(v)
		return err
	}
	return fmt.Errorf("unknown kind %d", k.Kind)
}

// toStrings accepts a single string (from the environment or a scalar
// YAML value) as a one-element list, a []string (a repeated flag), or a
// YAML list whose items are all strings.
func toStrings(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil, nil
		}
		return []string{v}, nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("want %v, got %s as item %d", kindStrings, describe(x), i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("want %v, got %s", kindStrings, describe(v))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("string %q", v)
	case map[string]any:
		return "a section"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T %v", v, v)
}

func toInt(v any) (int, error) {
	switch v := v.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case int32:
		return int(v), nil
	case uint64:
		if v <= 1<<62 {
			return int(v), nil
		}
	case float64:
		if v == float64(int(v)) && v >= -(1<<53) && v <= 1<<53 {
			return int(v), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("want %v, got %s", kindInt, describe(v))
}

func toFloat(v any) (float64, error) {
	switch v := v.(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want %v, got %s", kindFloat, describe(v))
}

func toBool(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("want %v, got %s", kindBool, describe(v))
}

func toDuration(v any) (time.Duration, error) {
	switch v := v.(type) {
	case time.Duration:
		return v, nil
	case string:
		if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil {
			return d, nil
		}
	}
	return 0, fmt.Errorf("want %v such as \"500ms\", got %s", kindDuration, describe(v))
}

// registry collects what the subcommand files declare in their init
// functions: command constructors and config keys. Declaration errors are
// kept and reported by Execute, so a bad declaration cannot panic before
// main's recover is in place.
type registry struct {
	commands []commandFactory
	keys     map[string]configKey
	errs     []error
}

func newRegistry() *registry { return &registry{keys: map[string]configKey{}} }

// defaultRegistry is what register and registerKeys add to.
var defaultRegistry = newRegistry()

// registerKeys declares config keys (call it from init). Declaring the
// same key in two files is allowed when kind and default agree, so two
// subcommands can share a setting such as "steps".
func registerKeys(keys ...configKey) { defaultRegistry.addKeys(keys...) }

func (r *registry) addKeys(keys ...configKey) {
	for _, k := range keys {
		if err := k.validate(); err != nil {
			r.errs = append(r.errs, err)
			continue
		}
		if old, ok := r.keys[k.Name]; ok {
			if old.Kind != k.Kind || !reflect.DeepEqual(old.defaultValue(), k.defaultValue()) {
				r.errs = append(r.errs, fmt.Errorf("config key %q declared twice with different kinds or defaults", k.Name))
			}
			continue
		}
		r.keys[k.Name] = k
	}
}

// checkSections rejects a key that is also the section of another key
// ("trace" and "trace.batch"): YAML cannot hold both.
func (r *registry) checkSections() error {
	for name := range r.keys {
		for other := range r.keys {
			if strings.HasPrefix(other, name+".") {
				return fmt.Errorf("config key %q is also the section of %q", name, other)
			}
		}
	}
	return nil
}

// isSection reports whether name is a prefix section of a known key.
func (r *registry) isSection(name string) bool {
	for k := range r.keys {
		if strings.HasPrefix(k, name+".") {
			return true
		}
	}
	return false
}

func (r *registry) sortedKeys() []string {
	names := make([]string, 0, len(r.keys))
	for k := range r.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// readConfigFile loads a YAML config file into v, rejecting keys nobody
// declared (naming the key and the file) and values of the wrong type.
func (r *registry) readConfigFile(v *viper.Viper, path string) error {
	data, err := readCapped(path, "config")
	if err != nil {
		return err
	}
	// A separate viper sees only the file, so its keys are exactly the
	// file's keys (the main one also holds defaults and flags).
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	keys := fv.AllKeys()
	sort.Strings(keys)
	for _, name := range keys {
		val := fv.Get(name)
		k, ok := r.keys[name]
		if !ok {
			if m, isMap := val.(map[string]any); r.isSection(name) && (val == nil || (isMap && len(m) == 0)) {
				continue // an empty section
			}
			return fmt.Errorf("config %s: unknown key %q (%s)", path, name, r.suggest(name))
		}
		if err := k.check(val); err != nil {
			return fmt.Errorf("config %s: key %q: %v", path, name, err)
		}
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// resolvePath makes a relative path read from the config file relative to
// the file's folder, so a config works from any working directory.
func resolvePath(p, configFile string) string {
	if p == "" || filepath.IsAbs(p) || configFile == "" {
		return p
	}
	return filepath.Join(filepath.Dir(configFile), p)
}

// suggest names the declared key closest to a misspelled one, or lists
// them all when none is close.
func (r *registry) suggest(name string) string {
	// A key in the wrong section (a top-level "output" for
	// generate.output) is named by its last part.
	var placed []string
	last := name[strings.LastIndex(name, ".")+1:]
	for _, k := range r.sortedKeys() {
		if k != name && k[strings.LastIndex(k, ".")+1:] == last {
			placed = append(placed, fmt.Sprintf("%q", k))
		}
	}
	if len(placed) > 0 {
		return "did you mean " + strings.Join(placed, " or ") + "?"
	}
	best, bestD := "", 4 // at most 3 edits away
	for _, k := range r.sortedKeys() {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known keys: " + strings.Join(r.sortedKeys(), ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
