package layoutexpr

import (
	"fmt"
	"strconv"
	"strings"
)

// Grid limits: a dim longer than gridMax shows its first gridHead and last
// gridTail indices around an ellipsis, and at most gridSlices 2-d slices
// of a 3-d or 4-d view are printed, so any size prints in a screenful.
const (
	gridMax    = 12
	gridHead   = 8
	gridTail   = 2
	gridSlices = 4
)

// Grid prints a row's view the way CuTe's print_layout does: the layout
// (shape):(strides) and, for each logical coordinate, the storage index it
// reads (offset + Σ i·stride). A 1-d view is one row; a 3-d or 4-d view is
// a sequence of 2-d slices over its last two dims. Failed rows and views
// of more than 4 dims have no grid.
func Grid(r Row) string {
	if r.Error != "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%s offset %d\n", tupleStr(r.Shape), tupleStr(r.Strides), r.Offset)
	switch nd := len(r.Shape); {
	case nd == 0:
		fmt.Fprintf(&b, "  %d\n", r.Offset)
	case nd == 1:
		grid2(&b, []int{1, r.Shape[0]}, []int{0, r.Strides[0]}, r.Offset)
	case nd == 2:
		grid2(&b, r.Shape, r.Strides, r.Offset)
	case nd <= 4:
		lead := r.Shape[:nd-2]
		n := 1
		for _, s := range lead {
			n *= s
		}
		if n == 0 {
			b.WriteString("  (empty)\n")
			break
		}
		idx := make([]int, len(lead))
		for k := 0; k < n; k++ {
			if k == gridSlices-1 && n > gridSlices {
				fmt.Fprintf(&b, "... %d more slices ...\n", n-gridSlices)
				k = n - 1
				rest := k
				for d := len(lead) - 1; d >= 0; d-- {
					idx[d] = rest % lead[d]
					rest /= lead[d]
				}
			}
			off := r.Offset
			parts := make([]string, len(lead))
			for d, i := range idx {
				off += i * r.Strides[d]
				parts[d] = strconv.Itoa(i)
			}
			fmt.Fprintf(&b, "[%s, :, :]\n", strings.Join(parts, ", "))
			grid2(&b, r.Shape[nd-2:], r.Strides[nd-2:], off)
			for d := len(lead) - 1; d >= 0; d-- {
				idx[d]++
				if idx[d] < lead[d] {
					break
				}
				idx[d] = 0
			}
		}
	default:
		b.WriteString("  (no grid for more than 4 dims)\n")
	}
	return b.String()
}

func tupleStr(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	if len(v) == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ",") + ")"
}

// shown lists the indices of a dim of size n that a summary shows (-1 for
// the ellipsis).
func shown(n int) []int {
	var out []int
	if n <= gridMax {
		for i := 0; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	for i := 0; i < gridHead; i++ {
		out = append(out, i)
	}
	out = append(out, -1)
	for i := n - gridTail; i < n; i++ {
		out = append(out, i)
	}
	return out
}

// grid2 draws one 2-d (rows, cols) grid of storage indices.
func grid2(b *strings.Builder, shape, strides []int, off int) {
	rows, cols := shown(shape[0]), shown(shape[1])
	if len(rows) == 0 || len(cols) == 0 {
		b.WriteString("  (empty)\n")
		return
	}
	w := 1
	for _, i := range rows {
		for _, j := range cols {
			if i >= 0 && j >= 0 {
				w = max(w, len(strconv.Itoa(off+i*strides[0]+j*strides[1])))
			}
		}
	}
	for _, j := range cols {
		w = max(w, len(strconv.Itoa(j)))
	}
	lw := len(strconv.Itoa(shape[0] - 1))
	cell := func(s string) string { return fmt.Sprintf(" %*s ", w, s) }
	sep := strings.Repeat(" ", lw+2) + "+"
	for range cols {
		sep += strings.Repeat("-", w+2) + "+"
	}
	head := strings.Repeat(" ", lw+2) + " "
	for _, j := range cols {
		if j < 0 {
			head += cell("..") + " "
		} else {
			head += cell(strconv.Itoa(j)) + " "
		}
	}
	b.WriteString(strings.TrimRight(head, " ") + "\n" + sep + "\n")
	for _, i := range rows {
		label := fmt.Sprintf(" %*s |", lw, strconv.Itoa(i))
		if i < 0 {
			label = fmt.Sprintf(" %*s |", lw, ":")
		}
		b.WriteString(label)
		for _, j := range cols {
			switch {
			case i < 0 || j < 0:
				b.WriteString(cell("..") + "|")
			default:
				b.WriteString(cell(strconv.Itoa(off+i*strides[0]+j*strides[1])) + "|")
			}
		}
		b.WriteString("\n" + sep + "\n")
	}
}
