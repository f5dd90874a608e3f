package kvcache

import "math"

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }

// must returns v or panics: for test setup that cannot fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
