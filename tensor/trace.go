package tensor

import "sync"

// TraceStep is one row of a layout trace: what one named step produced.
type TraceStep struct {
	Step           int    `json:"step"`
	Op             string `json:"op"`
	Shape          []int  `json:"shape"`
	Strides        []int  `json:"strides"`
	Offset         int    `json:"offset"`
	Contiguous     bool   `json:"contiguous"`
	Storage        string `json:"storage"` // "new", or "shared(<name>)" naming the storage it views
	BytesAllocated int64  `json:"bytes_allocated"`
	BytesCopied    int64  `json:"bytes_copied"`
}

// Trace records the layout of each step of a computation, for printing as
// a table, Markdown or JSON. A nil *Trace records nothing, so kernels can
// call Record unconditionally.
type Trace struct {
	Title string
	Steps []TraceStep

	mu    sync.Mutex
	names map[*Storage]string
}

// NewTrace returns an empty trace.
func NewTrace(title string) *Trace {
	return &Trace{Title: title, names: map[*Storage]string{}}
}

// Input names the storage of t, so later steps that view it are shown as
// shared(name) instead of new.
func (tr *Trace) Input(name string, t *Tensor) {
	if tr == nil || t == nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, ok := tr.names[t.st]; !ok {
		tr.names[t.st] = name
	}
}

// Record appends a step for tensor t produced by op, which allocated and
// copied the given bytes. If t's storage was named before (by Input or an
// earlier step) the step is marked shared with that name; otherwise it is
// marked new and its storage takes op as its name.
func (tr *Trace) Record(op string, t *Tensor, allocated, copied int64) {
	if tr == nil || t == nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	storage := "new"
	if name, ok := tr.names[t.st]; ok {
		storage = "shared(" + name + ")"
	} else {
		tr.names[t.st] = op
	}
	tr.Steps = append(tr.Steps, TraceStep{
		Step:           len(tr.Steps) + 1,
		Op:             op,
		Shape:          t.Shape(),
		Strides:        t.Strides(),
		Offset:         t.offset,
		Contiguous:     t.IsContiguous(),
		Storage:        storage,
		BytesAllocated: allocated,
		BytesCopied:    copied,
	})
}
