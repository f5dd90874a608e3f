package chat

import (
	"context"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// Render is the template's text for msgs. It runs under o.Budget and
// stops with ctx: an error names the cap a template hit, or ctx's error.
// Render is for a Jinja template; run.c's format renders by RunCTurn.
func (t *Template) Render(ctx context.Context, msgs []Message, o Options) (string, error) {
	if t.tpl == nil {
		return "", fmt.Errorf("chat template %s is run.c's turn format, rendered per turn (RunCTurn)", t.name)
	}
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	data := map[string]jinja.Value{
		"messages":              jinja.FromGoValue(list),
		"add_generation_prompt": jinja.NewBool(o.AddGenerationPrompt),
		"bos_token":             jinja.NewString(o.BOS),
		"eos_token":             jinja.NewString(t.eos),
	}
	out, err := runBudgeted(ctx, t.tpl, data, o.Budget.withDefaults())
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.name, err)
	}
	return out, nil
}
