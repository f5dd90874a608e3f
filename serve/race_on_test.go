//go:build race

package serve

// raceEnabled: the race detector's shadow memory grows the resident set
// on its own, so TestSoak checks only the second half's growth under it.
const raceEnabled = true
