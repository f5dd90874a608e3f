package configs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Settings are the values of a registry's keys for one run, from four
// sources: a bound flag the user gave, then the key's environment
// variable, then the config file, then the key's default.
type Settings struct {
	reg        *Registry
	v          *viper.Viper
	flags      []binding
	configFile string // the file ReadFile read, "" if none
}

// binding is a flag bound to a key.
type binding struct {
	key  string
	flag *pflag.Flag
}

// NewSettings returns the settings of r's keys: their defaults, and the
// environment (read when a value is asked for). r's declarations should
// be checked first (Registry.Err).
func NewSettings(r *Registry) *Settings {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()
	for name, k := range r.keys {
		v.SetDefault(name, k.DefaultValue())
	}
	return &Settings{reg: r, v: v}
}

// BindFlag makes f set key when the user gives it. Bind only the flags
// of what runs: a key has one flag, the one bound last.
func (s *Settings) BindFlag(key string, f *pflag.Flag) error {
	if _, ok := s.reg.keys[key]; !ok {
		return fmt.Errorf("config key %q is not declared", key)
	}
	if err := s.v.BindPFlag(key, f); err != nil {
		return err
	}
	s.flags = append(s.flags, binding{key, f})
	return nil
}

// MaxFileBytes is the largest config file ReadFile reads: a log file or
// /dev/zero named by mistake must not exhaust memory.
const MaxFileBytes = 16 << 20

// ReadFile reads the YAML config file at path, refusing keys nobody
// declared (naming the key, the file and the key meant) and values of
// the wrong type. Relative paths in it are resolved against its folder
// (Path).
func (s *Settings) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("config %s is larger than %.1f MiB, the most it may be", path, float64(MaxFileBytes)/(1<<20))
	}
	return s.readConfig(path, data)
}

// readConfig is ReadFile of the file's contents, data.
func (s *Settings) readConfig(path string, data []byte) error {
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
		k, ok := s.reg.keys[name]
		if !ok {
			if m, isMap := val.(map[string]any); s.reg.isSection(name) && (val == nil || (isMap && len(m) == 0)) {
				continue // an empty section
			}
			return fmt.Errorf("config %s: unknown key %q (%s)", path, name, s.reg.Suggest(name))
		}
		if err := k.check(val); err != nil {
			return fmt.Errorf("config %s: key %q: %v", path, name, err)
		}
	}
	s.v.SetConfigType("yaml")
	if err := s.v.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	s.configFile = path
	return nil
}

// Check type-checks every key's effective value, in name order; the
// error names the key and where its value came from.
func (s *Settings) Check() error {
	for _, name := range s.reg.Names() {
		if err := s.reg.keys[name].check(s.v.Get(name)); err != nil {
			return fmt.Errorf("config key %q (from %s): %v", name, s.Source(name), err)
		}
	}
	return nil
}

// Source names where key's value comes from, as error messages say it:
// "flag --steps", "env INFER_STEPS", "config <file>" or "default".
func (s *Settings) Source(key string) string {
	for _, b := range s.flags {
		if b.key == key && b.flag.Changed {
			return "flag --" + b.flag.Name
		}
	}
	if v, ok := os.LookupEnv(EnvName(key)); ok && v != "" {
		return "env " + EnvName(key)
	}
	if s.configFile != "" && s.v.InConfig(key) {
		return "config " + s.configFile
	}
	return "default"
}

// Rank is the precedence of key's source: 3 for a flag, 2 for the
// environment, 1 for the config file, 0 for the default. Two settings
// that say the same thing differently (steps and n_predict) let the
// higher rank win.
func (s *Settings) Rank(key string) int {
	src := s.Source(key)
	switch {
	case strings.HasPrefix(src, "flag "):
		return 3
	case strings.HasPrefix(src, "env "):
		return 2
	case strings.HasPrefix(src, "config "):
		return 1
	}
	return 0
}

// The getters return a key's value in its kind's Go type. Check has
// validated every value, so they do not fail; a key of another kind
// reads as the zero value.

// String returns a string key's value.
func (s *Settings) String(key string) string {
	str, _ := s.v.Get(key).(string)
	return str
}

// Path returns a path key's value; a relative path that came from the
// config file is resolved against the file's folder, so a config works
// from any working directory.
func (s *Settings) Path(key string) string {
	p := s.String(key)
	if p == "" || filepath.IsAbs(p) || !strings.HasPrefix(s.Source(key), "config ") {
		return p
	}
	return filepath.Join(filepath.Dir(s.configFile), p)
}

// Int returns an integer key's value.
func (s *Settings) Int(key string) int { n, _ := toInt(s.v.Get(key)); return n }

// Float returns a number key's value.
func (s *Settings) Float(key string) float64 { f, _ := toFloat(s.v.Get(key)); return f }

// Bool returns a boolean key's value.
func (s *Settings) Bool(key string) bool { b, _ := toBool(s.v.Get(key)); return b }

// Strings returns a string-list key's value.
func (s *Settings) Strings(key string) []string { l, _ := toStrings(s.v.Get(key)); return l }

// Duration returns a duration key's value.
func (s *Settings) Duration(key string) time.Duration { d, _ := toDuration(s.v.Get(key)); return d }
