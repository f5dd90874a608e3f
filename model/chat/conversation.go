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
// the end of IDs: run.c's rendering of the turn (with BOS) for its
// llama-2 format, the line itself without a template, and for a Jinja
// template the part of the re-rendered conversation after what the model
// has already seen, tokenized by Encode's rule (the template's control
// tokens are control ids, the messages plain text). When the rendering
// does not extend what was fed (a template that rewrites history), the
// whole conversation is re-encoded and every id is new; prefix sharing
// still reuses whatever blocks agree.
func (c *Conversation) AddUser(ctx context.Context, line string) (int, error) {
	c.msgs = append(c.msgs, Message{Role: "user", Content: line})
	var ids []int
	var err error
	switch {
	case c.tmpl == nil:
		ids, err = c.codec.Encode(line, len(c.ids) == 0 && c.addBOS, false)
	case c.tmpl.RunC():
		ids, err = c.codec.Encode(RunCTurn(c.system, line, len(c.ids) == 0), c.addBOS, false)
	default:
		msgs := c.msgs
		if c.system != "" {
			msgs = append([]Message{{Role: "system", Content: c.system}}, msgs...)
		}
		var p Prompt
		if p, err = Encode(ctx, c.tmpl, msgs, c.codec, c.addBOS, Options{AddGenerationPrompt: true}); err != nil {
			return 0, err
		}
		if len(c.ids) > 0 && strings.HasPrefix(p.Text, c.fed) {
			ids, err = p.IDsAfter(len(c.fed))
		} else {
			c.ids, ids = nil, p.IDs
		}
		c.fed = p.Text
	}
	if err != nil {
		return 0, err
	}
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
