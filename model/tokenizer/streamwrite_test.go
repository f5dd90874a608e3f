package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// WriteIDs and WriteJSON write, part by part, exactly what the whole
// text's ids print as: space-separated, and encoding/json's
// {"ids","pieces"} (no HTML escaping), over a text long enough to stream
// in several parts.
func TestStreamWriters(t *testing.T) {
	tk := synthTokenizer(t)
	text := streamCorpus(t, 3*streamWindow) + " <&> "
	o := EncodeOptions{BOS: true, EOS: true}
	ids, err := tk.EncodeWith(text, o)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	w := bufio.NewWriter(&got)
	if err := tk.NewStream(&chunkyReader{text, rand.New(rand.NewPCG(3, 4))}, o).WriteIDs(w); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = strconv.Itoa(id)
	}
	if want := strings.Join(words, " ") + "\n"; got.String() != want {
		t.Errorf("WriteIDs wrote %d bytes, want %d", got.Len(), len(want))
	}

	got.Reset()
	if err := tk.NewStream(&chunkyReader{text, rand.New(rand.NewPCG(3, 4))}, o).WriteJSON(w, tk); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	pieces := make([]string, len(ids))
	for i, id := range ids {
		pieces[i] = tk.Piece(id)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		IDs    []int    `json:"ids"`
		Pieces []string `json:"pieces"`
	}{ids, pieces}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("WriteJSON differs from encoding/json's:\n%.300s\nwant\n%.300s", got.String(), want.String())
	}
}

// failWriter fails every write.
type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

// A failed write stops the tokenizing with one error naming the output.
func TestStreamWritersStopOnWriteError(t *testing.T) {
	tk := synthTokenizer(t)
	text := streamCorpus(t, 3*streamWindow)
	for name, write := range map[string]func(*Stream, *bufio.Writer) error{
		"ids":  func(s *Stream, w *bufio.Writer) error { return s.WriteIDs(w) },
		"json": func(s *Stream, w *bufio.Writer) error { return s.WriteJSON(w, tk) },
	} {
		s := tk.NewStream(strings.NewReader(text), EncodeOptions{})
		err := write(s, bufio.NewWriterSize(failWriter{}, 16))
		if !errors.Is(err, errFull) || !strings.HasPrefix(err.Error(), "writing the output: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
