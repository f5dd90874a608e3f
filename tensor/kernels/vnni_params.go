package kernels

// vnniParams is the per-matrix constant block the "sub" VNNI kernels read
// (GroupSize 4…32, so one 64-column chunk spans 64/GroupSize groups): Idx
// maps each int32 lane (4 columns) to its group within the chunk, for
// VPERMPS, and Mask selects the chunk's 64/GroupSize scales, so the masked
// load never reads past a scale row. The layout is fixed by the assembly:
// Idx at byte 0, Mask at byte 64.
type vnniParams struct {
	Idx  [16]int32
	Mask uint16
	_    [6]byte
	// TailMask (byte 72) selects the bytes of a row's last, partial
	// chunk (0: none) and TailScaleMask (byte 80) its scales.
	TailMask      uint64
	TailScaleMask uint16
	_             [6]byte
}
