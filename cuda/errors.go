package cuda

import (
	"errors"
	"fmt"
)

// ErrNoCUDA is what every device function of a build without the cuda tag
// returns: the kernels exist as source and the traffic simulation works, but
// nothing can run on a GPU, and nothing pretends to.
var ErrNoCUDA = errors.New("stride was built without CUDA support; rebuild with: scripts/cuda-build.sh && go build -tags cuda ./cmd/infer")

// ErrNoDevice is returned by a CUDA build on a machine where the CUDA
// runtime finds no GPU (or no driver).
var ErrNoDevice = errors.New("no CUDA device found (is the NVIDIA driver loaded? nvidia-smi lists the GPUs)")

// Error is a CUDA runtime error: the cudaError_t code, its message, and
// what Stride was doing.
type Error struct {
	Op   string
	Code int
	Msg  string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (cudaError %d)", e.Op, e.Msg, e.Code)
}
