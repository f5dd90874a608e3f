package configs

import (
	"strings"
	"testing"
)

// FuzzReadConfig: any file is either refused with an error that names
// the file, or accepted, and then every key's value passes Check and
// reads without a panic.
func FuzzReadConfig(f *testing.F) {
	for _, s := range []string{
		"demo:\n  count: 3\n  mode: slow\n  file: a/b\n  stop: [x, y]\n",
		"demo: {}\n", "demo:\n  cuont: 3\n", "demo: [\n", "verbose: true\n",
		"demo:\n  ratio: .inf\n", "demo.count: 2\n", "Demo:\n  Count: 2\n", "",
		"demo:\n  wait: 1s\n  on: yes\n", "demo:\n  stop: x\n", "demo:\n  count: 0x10\n",
	} {
		f.Add(s)
	}
	r := demo(f)
	f.Fuzz(func(t *testing.T, text string) {
		s := NewSettings(r)
		if err := s.readConfig("f.yaml", []byte(text)); err != nil {
			if !strings.HasPrefix(err.Error(), "config f.yaml") {
				t.Fatalf("%q: error %q does not name the file", text, err)
			}
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("%q was accepted, then refused: %v", text, err)
		}
		for _, name := range r.Names() {
			_ = s.Source(name)
		}
		_, _, _, _, _, _ = s.Int("demo.count"), s.String("demo.mode"), s.Path("demo.file"), s.Float("demo.ratio"), s.Bool("demo.on"), s.Duration("demo.wait")
		_ = s.Strings("demo.stop")
	})
}
