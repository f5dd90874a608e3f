package serve

import (
	"encoding/json"
	"fmt"
	"strings"
)

// chatBody is the JSON of POST /v1/chat/completions.
type chatBody struct {
	commonFields
	Messages    []chatMessage `json:"messages"`
	Logprobs    *bool         `json:"logprobs"`
	TopLogprobs *int          `json:"top_logprobs"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// contentPart is one part of a message's content given as a list.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// completionBody is the JSON of POST /v1/completions.
type completionBody struct {
	commonFields
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
}

// decodeChat parses and checks a chat request.
func decodeChat(body []byte) (*genRequest, *apiError) {
	var b chatBody
	if e := decodeJSON(body, &b); e != nil {
		return nil, e
	}
	g := &genRequest{chat: true, logprobs: -1}
	if e := b.apply(g); e != nil {
		return nil, e
	}
	if len(b.Messages) == 0 {
		return nil, badParam("messages", "messages must hold at least one message")
	}
	if len(b.Messages) > maxMessages {
		return nil, badParam("messages", "messages holds at most %d messages, not %d", maxMessages, len(b.Messages))
	}
	for i, m := range b.Messages {
		msg, e := m.decode(i)
		if e != nil {
			return nil, e
		}
		g.messages = append(g.messages, msg)
	}
	if b.Logprobs != nil && *b.Logprobs {
		g.logprobs = 0
	}
	if b.TopLogprobs != nil {
		if g.logprobs < 0 {
			return nil, badParam("top_logprobs", "top_logprobs needs logprobs set to true")
		}
		if e := checkLogprobs("top_logprobs", *b.TopLogprobs); e != nil {
			return nil, e
		}
		g.logprobs = *b.TopLogprobs
	}
	return g, nil
}

// decode checks message i: a role Stride's templates know, and text
// content (a string, or a list of text parts, joined).
func (m chatMessage) decode(i int) (Message, *apiError) {
	param := fmt.Sprintf("messages[%d]", i)
	role := m.Role
	if e := checkText(param+".role", role, maxNameBytes); e != nil {
		return Message{}, e
	}
	switch role {
	case "system", "user", "assistant":
	case "developer": // OpenAI's newer name for system
		role = "system"
	case "tool", "function":
		return Message{}, unsupported(param + ".role " + role)
	default:
		return Message{}, badParam(param+".role", "%s.role must be system, developer, user or assistant, not %q", param, role)
	}
	if !isNoOp("tool_calls", m.ToolCalls) {
		return Message{}, unsupported(param + ".tool_calls")
	}
	text, e := messageText(param+".content", m.Content)
	if e != nil {
		return Message{}, e
	}
	return Message{Role: role, Content: text}, nil
}

// messageText reads content: a string, or a list of {"type":"text"} parts.
func messageText(param string, raw json.RawMessage) (string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", badParam(param, "%s is required", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, checkText(param, s, maxTextBytes)
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(param, "%s must be a string or a list of text parts", param)
	}
	var text strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			if e := checkText(fmt.Sprintf("%s[%d].type", param, j), p.Type, maxNameBytes); e != nil {
				return "", e
			}
			return "", unsupported(fmt.Sprintf("%s[%d].type %q", param, j, p.Type))
		}
		if text.Len()+len(p.Text) > maxTextBytes {
			return "", checkText(param, text.String()+p.Text, maxTextBytes)
		}
		text.WriteString(p.Text)
	}
	return text.String(), nil
}

// decodeCompletion parses and checks a completion request.
func decodeCompletion(body []byte) (*genRequest, *apiError) {
	var b completionBody
	if e := decodeJSON(body, &b); e != nil {
		return nil, e
	}
	g := &genRequest{logprobs: -1}
	if e := b.apply(g); e != nil {
		return nil, e
	}
	if b.Logprobs != nil {
		if e := checkLogprobs("logprobs", *b.Logprobs); e != nil {
			return nil, e
		}
		g.logprobs = *b.Logprobs
	}
	ps, e := decodePrompt(b.Prompt)
	if e != nil {
		return nil, e
	}
	if len(ps)*g.n > maxN*4 {
		return nil, badParam("n", "prompts × n must be at most %d, not %d", maxN*4, len(ps)*g.n)
	}
	g.prompts = ps
	return g, nil
}

// decodePrompt reads prompt: a string, a list of strings, a list of token
// ids, or a list of such lists.
func decodePrompt(raw json.RawMessage) ([]promptInput, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badParam("prompt", "prompt is required")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []promptInput{{text: one}}, checkText("prompt", one, maxTextBytes)
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptInput{{ids: ids}}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		if len(texts) > maxPrompts {
			return nil, badParam("prompt", "prompt holds at most %d prompts, not %d", maxPrompts, len(texts))
		}
		ps := make([]promptInput, len(texts))
		for i, t := range texts {
			if e := checkText(fmt.Sprintf("prompt[%d]", i), t, maxTextBytes); e != nil {
				return nil, e
			}
			ps[i].text = t
		}
		return ps, nil
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		if len(lists) > maxPrompts {
			return nil, badParam("prompt", "prompt holds at most %d prompts, not %d", maxPrompts, len(lists))
		}
		ps := make([]promptInput, len(lists))
		for i, l := range lists {
			if len(l) == 0 {
				return nil, badParam("prompt", "prompt %d is an empty list of token ids", i)
			}
			ps[i].ids = l
		}
		return ps, nil
	}
	return nil, badParam("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of such lists, and not empty")
}
