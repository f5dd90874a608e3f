package configs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stride-lm/stride/configs"
)

// A front end declares its keys, defines their flags, reads a config
// file and checks every value; then it reads the values and where each
// came from.
func ExampleSettings() {
	r := configs.NewRegistry()
	r.Add(
		configs.Key{Name: "server.port", Kind: configs.Int, Default: 8080, Range: configs.InRange(1, 65535), Help: "port to listen on"},
		configs.Key{Name: "server.model", Kind: configs.Path, Help: "checkpoint to serve"},
	)
	if err := r.Err(); err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "configs-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(file, []byte("server:\n  port: 9000\n  model: models/m.gguf\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	s := configs.NewSettings(r)
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	port, _ := r.DefineFlag(fs, "port", "", "server.port", "port to listen on")
	if err := s.BindFlag("server.port", port); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("--port:", port.Usage)
	_ = fs.Parse([]string{"--port", "8443"})
	if err := s.ReadFile(file); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Check(); err != nil {
		fmt.Println(err)
		return
	}
	hide := func(text string) string { return strings.ReplaceAll(text, dir, "$DIR") }
	fmt.Println("port:", s.Int("server.port"), "from", s.Source("server.port"))
	fmt.Println("model:", hide(s.Path("server.model")), "from", hide(s.Source("server.model")))

	// A typo in a file is refused before anything runs.
	if err := os.WriteFile(file, []byte("server:\n  prot: 9000\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(hide(configs.NewSettings(r).ReadFile(file).Error()))
	// Output:
	// --port: port to listen on; in [1, 65535]; env INFER_SERVER_PORT
	// port: 8443 from flag --port
	// model: $DIR/models/m.gguf from config $DIR/server.yaml
	// config $DIR/server.yaml: unknown key "server.prot" (did you mean "server.port"?)
}
