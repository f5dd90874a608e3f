package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseIDs reads token ids written as text (infer tokenize --detokenize's
// input): integers separated by whitespace or commas, brackets allowed,
// so a JSON array reads too. Each must be an id of a vocabulary of vocab
// tokens; the error names the first that is not, by its 1-based place.
func ParseIDs(s string, vocab int) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == '[' || r == ']' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	ids := make([]int, 0, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("id %d: %q is not an integer", i+1, f)
		}
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("id %d: %d is outside the %d-token vocabulary", i+1, id, vocab)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
