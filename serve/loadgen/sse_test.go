package loadgen

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// scripted is a stream whose every Read delivers one event and sets the
// clock to that event's scripted time, so readStream's measurements can
// be checked exactly.
type scripted struct {
	events []string
	times  []time.Duration
	clock  *time.Time
	base   time.Time
	i      int
}

func (s *scripted) Read(p []byte) (int, error) {
	if s.i == len(s.events) {
		return 0, io.EOF
	}
	*s.clock = s.base.Add(s.times[s.i])
	n := copy(p, s.events[s.i])
	s.events[s.i] = s.events[s.i][n:]
	if s.events[s.i] == "" {
		s.i++
	}
	return n, nil
}

func data(s string) string { return "data: " + s + "\n\n" }

// readStream measures, from the events' arrival times: TTFT at the
// first non-empty content (not the role chunk), the gaps between content
// chunks (not the usage chunk), the latency at [DONE], the token counts
// from usage. Exact to the nanosecond, as the clock is scripted.
func TestReadStreamMeasuresTheDefinitions(t *testing.T) {
	var clock time.Time
	base := time.Unix(1000, 0)
	msd := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	s := &scripted{clock: &clock, base: base, events: []string{
		data(`{"choices":[{"delta":{"role":"assistant","content":""}}]}`),
		data(`{"choices":[{"delta":{"content":"Once"}}]}`),
		data(`{"choices":[{"delta":{"content":" upon"}}]}`),
		": keep-alive comment\n\n",
		data(`{"choices":[{"delta":{"content":" a"}}]}`),
		data(`{"choices":[{"delta":{},"finish_reason":"length"}]}`),
		data(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`),
		data(`[DONE]`),
	}, times: []time.Duration{msd(5), msd(40.5), msd(52), msd(60), msd(71.25), msd(72), msd(73), msd(80)}}
	now := func() time.Time { return clock }
	rec := readStream(context.Background(), Record{}, s, base, now)
	if !rec.OK() {
		t.Fatalf("failed: %s %s", rec.Status, rec.Err)
	}
	if rec.TTFT != msd(40.5) || rec.Latency != msd(80) || rec.Text != "Once upon a" {
		t.Errorf("TTFT %v latency %v text %q", rec.TTFT, rec.Latency, rec.Text)
	}
	if len(rec.ITL) != 2 || rec.ITL[0] != msd(11.5) || rec.ITL[1] != msd(19.25) {
		t.Errorf("ITL %v, want [11.5ms 19.25ms]", rec.ITL)
	}
	if rec.PromptLen != 7 || rec.OutputLen != 3 || rec.TPOT() != (msd(80)-msd(40.5))/2 {
		t.Errorf("usage %d/%d TPOT %v", rec.PromptLen, rec.OutputLen, rec.TPOT())
	}
}

// The stream's failures: no usage, an error event, a chunk that is not
// JSON; each is a status, never a guess.
func TestReadStreamFailures(t *testing.T) {
	for _, c := range []struct {
		body, status string
	}{
		{data(`{"choices":[{"text":"a"}]}`) + data(`[DONE]`), "missing usage"},
		{data(`{"choices":[{"text":"a"}]}`), "error"}, // cut off: no usage, no [DONE]
		{data(`{"choices":[{"text":"a"}]}`) + data(`{"error":{"message":"boom","type":"server_error"}}`) + data(`[DONE]`), "stream error"},
		{data(`{"choices":[{"text":"a"}]`), "stream error"},
		{data(`{"usage":{"prompt_tokens":-1,"completion_tokens":2}}`), "stream error"},
		{"data: " + strings.Repeat("x", maxLine+10), "error"},
	} {
		now := time.Now
		rec := readStream(context.Background(), Record{}, strings.NewReader(c.body), now(), now)
		if rec.Status != c.status || rec.Err == "" {
			t.Errorf("%.60q: status %q (%s), want %q", c.body, rec.Status, rec.Err, c.status)
		}
	}
}

// The SSE framing: CRLF lines, a data field without its space, two data
// lines joined by a newline, an event cut off by the end of the stream.
func TestSSEReaderFraming(t *testing.T) {
	r := newSSEReader(strings.NewReader("data:{\"a\":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\nid: 3\n\ndata: tail"))
	var got []string
	for {
		d, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if want := []string{`{"a":1}`, "one\ntwo", "tail"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// Completion chunks carry text; chat chunks a delta's content.
func TestParseEventShapes(t *testing.T) {
	for _, c := range []struct{ in, content string }{
		{`{"choices":[{"text":"hi","index":0}]}`, "hi"},
		{`{"choices":[{"delta":{"content":"yo"}}]}`, "yo"},
		{`{"choices":[{"delta":{"content":null}}]}`, ""},
		{`{"choices":[]}`, ""},
	} {
		ev, err := parseEvent([]byte(c.in))
		if err != nil || ev.content != c.content {
			t.Errorf("%s: %q %v", c.in, ev.content, err)
		}
	}
}

var streamSeeds = []string{
	data(`{"choices":[{"delta":{"content":"a"}}]}`) + data(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`) + data(`[DONE]`),
	data(`{"choices":[{"text":"x"}]}`) + data(`{"error":"bad"}`),
	"data: [DONE]\r\n\r\n",
	": c\n\ndata: {\ndata: }\n\n",
	"data: {\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":1}}\n\n",
	"\n\n\n",
}

// The committed corpus holds the seeds above.
func TestFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for i, s := range streamSeeds {
		want[fmt.Sprintf("seed-%02d", i)] = testfixture.CorpusEntry([]byte(s))
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzReadStream"), want, "TestFuzzCorpusCurrent")
	want = map[string][]byte{}
	for i, s := range jsonlSeeds {
		want[fmt.Sprintf("seed-%02d", i)] = testfixture.CorpusEntry([]byte(s))
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzParseJSONL"), want, "TestFuzzCorpusCurrent")
}

// Any stream gives a record that keeps the invariants: success has
// usage and no error, failure has a status and a message, ITL has one
// gap fewer than the content chunks, nothing is negative.
func FuzzReadStream(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		now := time.Now
		rec := readStream(context.Background(), Record{}, strings.NewReader(string(b)), now(), now)
		if rec.OK() && rec.Err != "" || !rec.OK() && rec.Err == "" {
			t.Fatalf("status %q with error %q", rec.Status, rec.Err)
		}
		if rec.OK() && (rec.PromptLen < 0 || rec.OutputLen < 0) || rec.TTFT < 0 || rec.Latency < rec.TTFT {
			t.Fatalf("record %+v", rec)
		}
		if rec.Text == "" && len(rec.ITL) > 0 {
			t.Fatalf("gaps without content: %+v", rec)
		}
	})
}
