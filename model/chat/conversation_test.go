package chat

import (
	"context"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model/tokenizer"
)

// A conversation's second turn extends the first: its ids start with
// everything fed so far (the first turn and the reply, as generated) and
// add only the rest of the re-rendered conversation, which is what
// rendering the whole conversation gives.
func TestConversationExtendsWhatWasFed(t *testing.T) {
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Load("chatml")
	if err != nil {
		t.Fatal(err)
	}
	c := NewConversation(tmpl, codec, false, "Be brief.")
	n1, err := c.AddUser(context.Background(), "Hi")
	if err != nil || n1 != len(c.IDs()) || n1 == 0 {
		t.Fatalf("first turn: %d ids of %d, %v", n1, len(c.IDs()), err)
	}
	first := slices.Clone(c.IDs())
	reply, _ := codec.Encode("Hello!<|im_end|>\n", false, false)
	c.AddReply(reply, "Hello!")
	n2, err := c.AddUser(context.Background(), "Bye")
	if err != nil {
		t.Fatal(err)
	}
	ids := c.IDs()
	if !slices.Equal(ids[:len(first)], first) || !slices.Equal(ids[len(first):len(first)+len(reply)], reply) || n2 != len(ids)-len(first)-len(reply) {
		t.Fatalf("second turn: %d new ids; the conversation does not extend the first turn and the reply", n2)
	}
	whole, err := Encode(context.Background(), tmpl, []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "Bye"}}, codec, false, Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, whole.IDs) {
		t.Errorf("ids %v\nwhole conversation %v", ids, whole.IDs)
	}
	raw := NewConversation(nil, codec, true, "")
	if n, _ := raw.AddUser(context.Background(), "ab"); n != 3 || raw.IDs()[0] != codec.BOS() {
		t.Errorf("raw: %d ids %v, want BOS a b", n, raw.IDs())
	}
}

// A template that rewrites history (here: it renders the last message
// only) does not extend what was fed: the turn re-encodes the whole
// conversation, and every id is new.
func TestConversationReencodesRewrittenHistory(t *testing.T) {
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	src := "{% for m in messages %}{% if loop.last %}[{{ m.content }}]{% endif %}{% endfor %}"
	tmpl, err := New("last only", src, "")
	if err != nil {
		t.Fatal(err)
	}
	c := NewConversation(tmpl, codec, true, "")
	if _, err := c.AddUser(context.Background(), "Hi"); err != nil {
		t.Fatal(err)
	}
	reply, _ := codec.Encode("Hello!", false, false)
	c.AddReply(reply, "Hello!")
	n, err := c.AddUser(context.Background(), "Bye")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := codec.Encode("[Bye]", true, false)
	if !slices.Equal(c.IDs(), want) || n != len(want) {
		t.Errorf("after a rewritten history: %d new ids, ids %v; want all of %v", n, c.IDs(), want)
	}
}

// Resume of a whole history gives the ids of the conversation built turn
// by turn with the same replies: run.c's format closes each earlier
// reply with the codec's EOS, the system prompt goes into the first user
// turn, and a history without a user message opens an empty turn; a
// Jinja template renders the history at once.
func TestResumeIsTheConversation(t *testing.T) {
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "Bye"}}
	chatml, err := Load("chatml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range []*Template{Fallback(), chatml} {
		turns := NewConversation(tmpl, codec, true, "Be brief.")
		if _, err := turns.AddUser(ctx, "Hi"); err != nil {
			t.Fatal(err)
		}
		reply, _ := codec.Encode("Hello!", false, false)
		if tmpl.RunC() {
			reply = append(reply, codec.EOS())
		} else {
			reply, _ = codec.Encode("Hello!<|im_end|>", false, false)
		}
		turns.AddReply(reply, "Hello!")
		if _, err := turns.AddUser(ctx, "Bye"); err != nil {
			t.Fatal(err)
		}
		whole, err := Resume(ctx, tmpl, codec, true, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(whole.IDs(), turns.IDs()) {
			t.Errorf("run.c format %v: Resume %v\nturn by turn %v", tmpl.RunC(), whole.IDs(), turns.IDs())
		}
	}
	sys, err := Resume(ctx, Fallback(), codec, true, msgs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := codec.Encode(RunCTurn("Be brief.", "", true), true, false); !slices.Equal(sys.IDs(), want) {
		t.Errorf("a system prompt alone: %v, want its turn %v", sys.IDs(), want)
	}
}
