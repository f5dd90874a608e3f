package chat

import (
	"context"
	"strings"

	"github.com/stride-lm/stride/model/tokenizer"
)

// Conversation is a chat's token history, for a front end that feeds the
// whole conversation to the engine at every turn so that the engine's
// prefix sharing reuses the KV blocks already computed (infer chat): the
// messages, the ids the model has seen (BOS first, replies included) and
// the text those ids stand for.
type Conversation struct {
	tmpl   *Template // nil: raw continuation
	codec  tokenizer.Codec
	addBOS bool
	system string
	msgs   []Message
	users  int // user turns so far
	ids    []int
	fed    string // the text ids stands for (Jinja templates)
}

// NewConversation starts a conversation rendered with t (nil: no
// template, each user line continues the text, for base models), for
// codec, with BOS first when addBOS (checkpoint.Generation.AddBOS), and
// the system prompt system ("" for none).
func NewConversation(t *Template, codec tokenizer.Codec, addBOS bool, system string) *Conversation {
	return &Conversation{tmpl: t, codec: codec, addBOS: addBOS, system: system}
}

// IDs are the conversation's ids so far: the next prompt to run. The
// slice is the conversation's own; the caller must not change it.
func (c *Conversation) IDs() []int { return c.ids }

// AddUser appends the user's turn and returns how many ids it added at
// the end of IDs: run.c's rendering of the turn (with BOS; the system
// prompt goes into the first user turn) for its llama-2 format, the line
// itself without a template, and for a Jinja template the part of the
// re-rendered conversation after what the model has already seen,
// tokenized by Encode's rule (the template's control tokens are control
// ids, the messages plain text). When the rendering does not extend what
// was fed (a template that rewrites history), the whole conversation is
// re-encoded and every id is new; prefix sharing still reuses whatever
// blocks agree.
func (c *Conversation) AddUser(ctx context.Context, line string) (int, error) {
	c.msgs = append(c.msgs, Message{Role: "user", Content: line})
	first := c.users == 0
	c.users++
	var ids []int
	var err error
	switch {
	case c.tmpl == nil:
		ids, err = c.codec.Encode(line, len(c.ids) == 0 && c.addBOS, false)
	case c.tmpl.RunC():
		ids, err = c.codec.Encode(RunCTurn(c.system, line, first), c.addBOS, false)
	default:
		return c.rerender(ctx)
	}
	if err != nil {
		return 0, err
	}
	c.ids = append(c.ids, ids...)
	return len(ids), nil
}

// rerender encodes the messages with the Jinja template (the system
// prompt first, the generation prompt last) and appends to IDs what the
// rendering adds after the text already fed, or, when it does not extend
// that text, replaces IDs with the whole encoding. It returns how many
// ids are new.
func (c *Conversation) rerender(ctx context.Context) (int, error) {
	msgs := c.msgs
	if c.system != "" {
		msgs = append([]Message{{Role: "system", Content: c.system}}, msgs...)
	}
	p, err := Encode(ctx, c.tmpl, msgs, c.codec, c.addBOS, Options{AddGenerationPrompt: true})
	if err != nil {
		return 0, err
	}
	var ids []int
	if len(c.ids) > 0 && strings.HasPrefix(p.Text, c.fed) {
		if ids, err = p.IDsAfter(len(c.fed)); err != nil {
			return 0, err
		}
	} else {
		c.ids, ids = nil, p.IDs
	}
	c.fed = p.Text
	c.ids = append(c.ids, ids...)
	return len(ids), nil
}

// AddReply appends the model's reply: the ids it generated after IDs
// (end markers included, as fed) and its text with the markers cut, the
// assistant message the template renders next turn.
func (c *Conversation) AddReply(ids []int, text string) {
	prev := 0 // not BOS: a first piece keeps its leading space
	if len(c.ids) > 0 {
		prev = c.ids[len(c.ids)-1]
	}
	c.ids = append(c.ids, ids...)
	c.fed += tokenizer.PrintableText(c.codec, prev, ids) // the text fed, markers included
	c.msgs = append(c.msgs, Message{Role: "assistant", Content: text})
}

// Resume is the conversation whose history msgs a client sends whole (an
// OpenAI messages list), for a front end that keeps no conversation of
// its own (infer serve): its IDs are the prompt that infer chat, which
// builds its Conversation turn by turn, feeds after the same turns when
// each earlier reply is what the model generated.
//
// With a Jinja template the messages, system ones included where they
// stand, are rendered at once with the generation prompt (Encode). In
// run.c's llama-2 format each user message is a turn as AddUser renders
// it (the system messages, joined, go into the first), and each
// assistant message is its text's ids closed by the tokenizer's EOS, the
// id at which run.c's loop ends a reply and which it feeds back (none
// when the vocabulary has no EOS). A history with no user message opens
// an empty user turn, which carries the system prompt. Without a
// template (t nil) user messages continue the text and assistant
// messages are their text's ids.
func Resume(ctx context.Context, t *Template, codec tokenizer.Codec, addBOS bool, msgs []Message) (*Conversation, error) {
	c := NewConversation(t, codec, addBOS, "")
	if t != nil && !t.RunC() {
		c.msgs = append([]Message(nil), msgs...)
		for _, m := range msgs {
			if m.Role == "user" {
				c.users++
			}
		}
		if _, err := c.rerender(ctx); err != nil {
			return nil, err
		}
		return c, nil
	}
	for _, m := range msgs {
		var err error
		switch m.Role {
		case "system":
			c.system += m.Content
		case "user":
			_, err = c.AddUser(ctx, m.Content)
		default: // an earlier reply
			err = c.addReplyText(m.Content)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.users == 0 {
		if _, err := c.AddUser(ctx, ""); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addReplyText appends an earlier reply known by its text only: its ids,
// closed in run.c's format by EOS as the model ended it there.
func (c *Conversation) addReplyText(text string) error {
	ids, err := c.codec.Encode(text, false, false)
	if err != nil {
		return err
	}
	if eos := c.codec.EOS(); c.tmpl != nil && eos >= 0 {
		ids = append(ids, eos)
	}
	c.AddReply(ids, text)
	return nil
}
