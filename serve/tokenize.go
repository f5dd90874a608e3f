package serve

import "net/http"

// tokenizeBody is POST /tokenize, as vLLM's: a prompt or chat messages.
type tokenizeBody struct {
	Model            *string       `json:"model"`
	Prompt           *string       `json:"prompt"`
	Messages         []chatMessage `json:"messages"`
	AddSpecialTokens *bool         `json:"add_special_tokens"`
}

// tokenize answers {"tokens", "count", "max_model_len"}.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	ids, e := s.tokenizeRequest(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Tokens      []int `json:"tokens"`
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
	}{ids, len(ids), s.b.MaxModelLen()})
}

func (s *Server) tokenizeRequest(w http.ResponseWriter, r *http.Request) ([]int, *apiError) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, e
	}
	var b tokenizeBody
	if e := decodeJSON(body, &b); e != nil {
		return nil, e
	}
	if e := s.checkModel(b.Model); e != nil {
		return nil, e
	}
	if b.Prompt != nil {
		if e := checkText("prompt", *b.Prompt, maxTextBytes); e != nil {
			return nil, e
		}
		add := b.AddSpecialTokens == nil || *b.AddSpecialTokens
		ids, err := s.b.Tokenize(*b.Prompt, add)
		if err != nil {
			return nil, badParam("prompt", "prompt: %v", err)
		}
		return ids, nil
	}
	if len(b.Messages) == 0 {
		return nil, badParam("prompt", "give prompt or messages")
	}
	if len(b.Messages) > maxMessages {
		return nil, badParam("messages", "messages holds at most %d messages, not %d", maxMessages, len(b.Messages))
	}
	msgs := make([]Message, len(b.Messages))
	for i, m := range b.Messages {
		var e *apiError
		if msgs[i], e = m.decode(i); e != nil {
			return nil, e
		}
	}
	ids, err := s.b.TokenizeChat(msgs)
	if err != nil {
		return nil, badParam("messages", "messages: %v", err)
	}
	return ids, nil
}

// detokenize answers {"prompt"} for {"tokens"}.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	var b struct {
		Model  *string `json:"model"`
		Tokens []int   `json:"tokens"`
	}
	if e == nil {
		e = decodeJSON(body, &b)
	}
	if e == nil {
		e = s.checkModel(b.Model)
	}
	vocab := s.b.VocabSize()
	for _, id := range b.Tokens {
		if e == nil && (id < 0 || id >= vocab) {
			e = badParam("tokens", "token id %d is outside the vocabulary of %d tokens", id, vocab)
		}
	}
	if e != nil {
		writeError(w, e)
		return
	}
	text, err := s.b.Detokenize(b.Tokens)
	if err != nil {
		writeError(w, badParam("tokens", "tokens: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Prompt string `json:"prompt"`
	}{text})
}

// checkModel is the 404 for a model this server does not serve.
func (s *Server) checkModel(name *string) *apiError {
	if name == nil || *name == "" || *name == s.cfg.ModelName {
		return nil
	}
	e := notFound("the model `" + *name + "` does not exist; this server serves `" + s.cfg.ModelName + "`")
	e.Param, e.Code = "model", "model_not_found"
	return e
}
