package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
)

// jsonConfig is the part of tokenizer_config.json read here.
type jsonConfig struct {
	AddBOS       *bool           `json:"add_bos_token"`
	AddEOS       *bool           `json:"add_eos_token"`
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	Pad          json.RawMessage `json:"pad_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// applyConfig reads tokenizer_config.json: its BOS and EOS override the
// post-processor's, its add_bos/add_eos flags the post-processor's choice.
func (t *Tokenizer) applyConfig(b []byte) error {
	var c jsonConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	var err error
	var bos, eos int
	if bos, err = t.configTokenID(c.BOS, "bos_token"); err != nil {
		return err
	}
	if eos, err = t.configTokenID(c.EOS, "eos_token"); err != nil {
		return err
	}
	if bos >= 0 {
		t.bos = bos
	}
	if eos >= 0 {
		t.eos = eos
	}
	if t.pad, err = t.configTokenID(c.Pad, "pad_token"); err != nil {
		return err
	}
	if c.AddBOS != nil {
		t.addBOS = *c.AddBOS
	}
	if c.AddEOS != nil {
		t.addEOS = *c.AddEOS
	}
	if t.addBOS && t.bos < 0 {
		return errors.New("add_bos_token is set but there is no bos_token")
	}
	if t.addEOS && t.eos < 0 {
		return errors.New("add_eos_token is set but there is no eos_token")
	}
	t.chatTemplate, err = chatTemplateOf(c.ChatTemplate, t.chatTemplate)
	return err
}

// configTokenID returns the id of a token given as a string or as a token
// object with a content, or -1 when raw is absent or null. what names the
// key in errors.
func (t *Tokenizer) configTokenID(raw json.RawMessage, what string) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return -1, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var obj struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return -1, fmt.Errorf("%s is neither a string nor a token object", what)
		}
		s = obj.Content
	}
	id, ok := t.ids[s]
	if !ok {
		return -1, fmt.Errorf("%s %q is not in the vocabulary", what, s)
	}
	return id, nil
}

// chatTemplateOf reads chat_template, a string or a list of named
// templates (of which it keeps "default", else the first); absent or
// null, the template stays current.
func chatTemplateOf(raw json.RawMessage, current string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return current, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return current, errors.New("chat_template is neither a string nor a list of named templates")
	}
	tmpl := current
	for i, nt := range named {
		if nt.Name == "default" || (i == 0 && tmpl == "") {
			tmpl = nt.Template
		}
	}
	return tmpl, nil
}
