package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxLine bounds one line of a server-sent event stream.
const maxLine = 1 << 20

// usage is the OpenAI usage object a stream's last chunk carries.
type usage struct {
	PromptTokens     *int `json:"prompt_tokens"`
	CompletionTokens *int `json:"completion_tokens"`
}

// chunk is one streamed chat or completion chunk, as far as the
// benchmark reads it.
type chunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// event is what one data event of the stream says.
type event struct {
	done    bool   // data: [DONE]
	content string // the text of the event's first choice
	usage   *usage
	errMsg  string // an error event's message
}

// parseEvent reads one event's data.
func parseEvent(data []byte) (event, error) {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		return event{done: true}, nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return event{}, fmt.Errorf("stream chunk is not JSON: %.80q", data)
	}
	var ev event
	if len(c.Error) > 0 && string(c.Error) != "null" {
		ev.errMsg = errorMessage(c.Error)
		return ev, nil
	}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		switch {
		case ch.Delta != nil && ch.Delta.Content != nil:
			ev.content = *ch.Delta.Content
		case ch.Text != nil:
			ev.content = *ch.Text
		}
	}
	if c.Usage != nil && c.Usage.CompletionTokens != nil && c.Usage.PromptTokens != nil {
		if *c.Usage.CompletionTokens < 0 || *c.Usage.PromptTokens < 0 {
			return event{}, errors.New("stream usage has a negative token count")
		}
		ev.usage = c.Usage
	}
	return ev, nil
}

// errorMessage is the message of an OpenAI error object (or the raw
// value when it has none), cut to one short line.
func errorMessage(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	msg := string(raw)
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// sseReader splits a server-sent event stream into the data of its
// events: "data:" lines joined by newlines, an event ending at a blank
// line (or the end of the stream); comments and other fields are
// skipped.
type sseReader struct {
	r    *bufio.Reader
	data []byte
	has  bool
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event's data, or io.EOF at the end.
func (s *sseReader) next() ([]byte, error) {
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && s.has {
				s.has = false
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.has {
				s.has = false
				return s.data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // a comment (":..."), event:, id:, retry:
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if s.has {
			s.data = append(s.data, '\n')
		} else {
			s.data, s.has = s.data[:0], true
		}
		s.data = append(s.data, value...)
	}
}

// line reads one line without its CR LF or LF, at most maxLine bytes.
func (s *sseReader) line() ([]byte, error) {
	var out []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		out = append(out, frag...)
		if len(out) > maxLine {
			return nil, fmt.Errorf("stream line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || len(out) == 0) {
			return nil, err
		}
		out = bytes.TrimSuffix(out, []byte("\n"))
		return bytes.TrimSuffix(out, []byte("\r")), nil
	}
}
