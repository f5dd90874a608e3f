//go:build race

package llama2c

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = true
