package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/stride-lm/stride/model"
)

// Limits of the request fields. OpenAI documents stop (4 strings) and
// top_logprobs (20); n and the stop string length are Stride's bounds so
// that one request cannot occupy the whole server (vLLM leaves n open).
const (
	maxStops       = 4
	maxStopBytes   = 256
	maxN           = 16
	maxTopLogprobs = 20
	maxMessages    = 4096
	maxPrompts     = 64
	// maxJSONDepth caps the nesting of a body's arrays and objects: a
	// request needs 5 levels, and deeper bodies only cost the decoder.
	maxJSONDepth = 32
	// maxStopTokenIDs caps stop_token_ids: the engine checks each
	// generated token against them.
	maxStopTokenIDs = 256
	// maxNameBytes caps the short strings (model, user, a role, a
	// content part's type).
	maxNameBytes = 256
	// maxTextBytes caps one text field (a message's content, a prompt):
	// far beyond any context, short enough that tokenizing it is cheap.
	maxTextBytes = 1 << 20
)

// Message is one turn of a chat: its role (system, user or assistant) and
// its text.
type Message struct {
	Role    string
	Content string
}

// promptInput is one prompt of a completion request: text, or token ids
// when the client sent ids.
type promptInput struct {
	text string
	ids  []int
}

// genRequest is a validated chat or completion request, before
// tokenization.
type genRequest struct {
	chat     bool
	model    string
	messages []Message     // chat
	prompts  []promptInput // completion: each prompt gets n choices
	// maxTokens is the cap on generated tokens; 0 = the server's default.
	maxTokens int
	sampling  Sampling
	// given are the sampling fields the request set (nil: omitted), under
	// which withDefaults puts the checkpoint's defaults.
	given        model.SamplingDefaults
	stop         []string
	stopTokenIDs []int
	ignoreEOS    bool
	n            int
	// logprobs is -1 for none, else how many alternatives each token
	// reports beside the sampled one.
	logprobs     int
	stream       bool
	includeUsage bool
	user         string
	// tokenIDs writes logprobs' tokens as "token_id:<id>" (vLLM's
	// return_tokens_as_token_ids), for clients that need the ids.
	tokenIDs bool
}

// commonFields are the fields chat and completion requests share.
type commonFields struct {
	Model               *string         `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	RepetitionPenalty   *float64        `json:"repetition_penalty"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	StopTokenIDs        []int           `json:"stop_token_ids"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	N                   *int            `json:"n"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	User                *string         `json:"user"`
	TokensAsIDs         *bool           `json:"return_tokens_as_token_ids"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	unsupportedField
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

// unsupportedField lists the fields Stride cannot honour, as raw JSON; a
// field that is present and not its no-op value is refused.
type unsupportedField struct {
	Tools            json.RawMessage `json:"tools"`
	ToolChoice       json.RawMessage `json:"tool_choice"`
	Functions        json.RawMessage `json:"functions"`
	FunctionCall     json.RawMessage `json:"function_call"`
	ResponseFormat   json.RawMessage `json:"response_format"`
	LogitBias        json.RawMessage `json:"logit_bias"`
	Audio            json.RawMessage `json:"audio"`
	Modalities       json.RawMessage `json:"modalities"`
	Prediction       json.RawMessage `json:"prediction"`
	Suffix           json.RawMessage `json:"suffix"`
	Echo             json.RawMessage `json:"echo"`
	BestOf           json.RawMessage `json:"best_of"`
	GuidedJSON       json.RawMessage `json:"guided_json"`
	GuidedRegex      json.RawMessage `json:"guided_regex"`
	GuidedChoice     json.RawMessage `json:"guided_choice"`
	GuidedGrammar    json.RawMessage `json:"guided_grammar"`
	StructuredOutput json.RawMessage `json:"structured_outputs"`
}

// noOps are the values of an unsupported field that ask for nothing
// Stride lacks (what clients send as defaults).
var noOps = map[string][]string{
	"tool_choice":     {`"none"`},
	"response_format": {`{"type":"text"}`},
	"modalities":      {`["text"]`},
	"echo":            {`false`},
	"best_of":         {`1`},
}

// check refuses the first unsupported field that asks for something.
func (u *unsupportedField) check() *apiError {
	fields := []struct {
		name string
		raw  json.RawMessage
	}{{"tools", u.Tools}, {"tool_choice", u.ToolChoice}, {"functions", u.Functions},
		{"function_call", u.FunctionCall}, {"response_format", u.ResponseFormat},
		{"logit_bias", u.LogitBias}, {"audio", u.Audio}, {"modalities", u.Modalities},
		{"prediction", u.Prediction}, {"suffix", u.Suffix}, {"echo", u.Echo}, {"best_of", u.BestOf},
		{"guided_json", u.GuidedJSON}, {"guided_regex", u.GuidedRegex}, {"guided_choice", u.GuidedChoice},
		{"guided_grammar", u.GuidedGrammar}, {"structured_outputs", u.StructuredOutput}}
	for _, f := range fields {
		if isNoOp(f.name, f.raw) {
			continue
		}
		return unsupported(f.name)
	}
	return nil
}

func isNoOp(name string, raw json.RawMessage) bool {
	var c bytes.Buffer
	if len(raw) == 0 || json.Compact(&c, raw) != nil {
		return len(raw) == 0
	}
	s := c.String()
	switch s {
	case "null", "[]", "{}", `""`:
		return true
	}
	for _, ok := range noOps[name] {
		if s == ok {
			return true
		}
	}
	return false
}

// decodeJSON unmarshals body into v, turning the decoder's errors into a
// 400: bad syntax names no field, a wrong type names the field's path.
func decodeJSON(body []byte, v any) *apiError {
	if e := checkDepth(body); e != nil {
		return e
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Go names a field of an embedded struct with the struct's name
		// first; the client knows only the JSON path.
		te.Field = strings.TrimPrefix(strings.TrimPrefix(te.Field, "commonFields."), "unsupportedField.")
		if te.Field == "" {
			return badParam("", "the request body must be a JSON object, not %s", te.Value)
		}
		return badParam(te.Field, "%s must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return badParam("", "the request body is not valid JSON: %v", err)
}

// checkDepth refuses a body nested deeper than maxJSONDepth, before the
// decoder sees it. Invalid JSON passes: the decoder then says what is
// wrong with it.
func checkDepth(body []byte) *apiError {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				e := badParam("", "the request body nests arrays and objects deeper than %d levels", maxJSONDepth)
				e.Param = nil
				return e
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// checkText refuses a string field over limit bytes.
func checkText(param, s string, limit int) *apiError {
	if len(s) > limit {
		return badParam(param, "%s holds at most %d bytes, not %d", param, limit, len(s))
	}
	return nil
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "slice":
		return "an array"
	}
	return "an object"
}

// finite reports whether f is an ordinary number (JSON has no NaN, but a
// fuzzed float can overflow to Inf).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// apply checks the shared fields and copies them into g.
func (c *commonFields) apply(g *genRequest) *apiError {
	if e := c.unsupportedField.check(); e != nil {
		return e
	}
	if c.Model != nil {
		if e := checkText("model", *c.Model, maxNameBytes); e != nil {
			return e
		}
		g.model = *c.Model
	}
	if e := c.applyLengths(g); e != nil {
		return e
	}
	if e := c.applySampling(g); e != nil {
		return e
	}
	stops, e := decodeStop(c.Stop)
	if e != nil {
		return e
	}
	g.stop = stops
	if len(c.StopTokenIDs) > maxStopTokenIDs {
		return badParam("stop_token_ids", "stop_token_ids holds at most %d ids, not %d", maxStopTokenIDs, len(c.StopTokenIDs))
	}
	for _, id := range c.StopTokenIDs {
		if id < 0 {
			return badParam("stop_token_ids", "stop_token_ids must be token ids >= 0, not %d", id)
		}
	}
	g.stopTokenIDs = c.StopTokenIDs
	g.ignoreEOS = c.IgnoreEOS != nil && *c.IgnoreEOS
	g.stream = c.Stream != nil && *c.Stream
	if c.StreamOptions != nil {
		if !g.stream {
			return badParam("stream_options", "stream_options is only allowed when stream is true")
		}
		g.includeUsage = c.StreamOptions.IncludeUsage != nil && *c.StreamOptions.IncludeUsage
	}
	if c.User != nil {
		if e := checkText("user", *c.User, maxNameBytes); e != nil {
			return e
		}
		g.user = *c.User
	}
	g.tokenIDs = c.TokensAsIDs != nil && *c.TokensAsIDs
	return nil
}

// applyLengths checks n and the token caps. max_completion_tokens is the
// newer name of max_tokens and wins when both are set, as in vLLM.
func (c *commonFields) applyLengths(g *genRequest) *apiError {
	g.n = 1
	if c.N != nil {
		if *c.N < 1 || *c.N > maxN {
			return badParam("n", "n must be in [1, %d], not %d", maxN, *c.N)
		}
		g.n = *c.N
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", c.MaxTokens}, {"max_completion_tokens", c.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return badParam(f.name, "%s must be >= 1, not %d", f.name, *f.v)
		}
		g.maxTokens = *f.v
	}
	return nil
}

// applySampling checks the sampler's fields against vLLM's ranges.
func (c *commonFields) applySampling(g *genRequest) *apiError {
	s := Sampling{Temperature: 1, TopP: 1}
	type check struct {
		name   string
		v      *float64
		ok     func(float64) bool
		want   string
		target *float64
	}
	for _, f := range []check{
		{"temperature", c.Temperature, func(x float64) bool { return x >= 0 && x <= 100 }, "in [0, 100]", &s.Temperature},
		{"top_p", c.TopP, func(x float64) bool { return x > 0 && x <= 1 }, "in (0, 1]", &s.TopP},
		{"min_p", c.MinP, func(x float64) bool { return x >= 0 && x <= 1 }, "in [0, 1]", &s.MinP},
		{"repetition_penalty", c.RepetitionPenalty, func(x float64) bool { return x > 0 && x <= 100 }, "in (0, 100]", &s.RepetitionPenalty},
		{"presence_penalty", c.PresencePenalty, func(x float64) bool { return x == 0 }, "0 (presence_penalty is not supported)", nil},
		{"frequency_penalty", c.FrequencyPenalty, func(x float64) bool { return x == 0 }, "0 (frequency_penalty is not supported)", nil},
	} {
		if f.v == nil {
			continue
		}
		if !finite(*f.v) || !f.ok(*f.v) {
			return badParam(f.name, "%s must be %s, not %v", f.name, f.want, *f.v)
		}
		if f.target != nil {
			*f.target = *f.v
		}
	}
	if c.TopK != nil {
		if *c.TopK < -1 {
			return badParam("top_k", "top_k must be -1 or 0 (off) or >= 1, not %d", *c.TopK)
		}
		s.TopK = max(*c.TopK, 0)
	}
	if c.Seed != nil {
		s.Seed, s.Seeded = *c.Seed, true
	}
	g.sampling = s
	g.given = model.SamplingDefaults{Temperature: c.Temperature, TopP: c.TopP, TopK: c.TopK, MinP: c.MinP,
		RepetitionPenalty: c.RepetitionPenalty}
	return nil
}

// withDefaults is the request's sampling with the checkpoint's defaults d
// (Config.SamplingDefaults) in the fields it omitted, as vLLM's
// --generation-config auto fills them; the fields it set win.
func (g *genRequest) withDefaults(d model.SamplingDefaults) Sampling {
	s := g.sampling
	r := d.Resolve(g.given, model.SamplingSettings{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK,
		MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty})
	s.Temperature, s.TopP, s.MinP, s.RepetitionPenalty = r.Temperature, r.TopP, r.MinP, r.RepetitionPenalty
	s.TopK = max(r.TopK, 0) // top_k -1 is off, as 0
	return s
}

// decodeStop reads stop: a string or a list of at most maxStops strings.
func decodeStop(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	var list []string
	if json.Unmarshal(raw, &one) == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badParam("stop", "stop must be a string or a list of strings")
	}
	if len(list) > maxStops {
		return nil, badParam("stop", "stop holds at most %d strings, not %d", maxStops, len(list))
	}
	for _, s := range list {
		if s == "" || len(s) > maxStopBytes {
			return nil, badParam("stop", "each stop string must have 1 to %d bytes, not %d", maxStopBytes, len(s))
		}
	}
	return list, nil
}

// checkLogprobs checks top_logprobs-style counts.
func checkLogprobs(param string, n int) *apiError {
	if n < 0 || n > maxTopLogprobs {
		return badParam(param, "%s must be in [0, %d], not %d", param, maxTopLogprobs, n)
	}
	return nil
}
