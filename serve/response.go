package serve

// OpenAI's response objects, field for field, so that the official
// clients decode them. Fields that are null in OpenAI's responses are
// pointers or `any` here, never omitted.

// usage is the token accounting of a response.
type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

// promptDetails says how many prompt tokens the prefix cache served.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (u *usage) add(f Finish, promptCounted bool) {
	if !promptCounted {
		u.PromptTokens += f.PromptTokens
		u.PromptTokensDetails.CachedTokens += f.CachedTokens
	}
	u.CompletionTokens += f.GeneratedTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
}

// chatCompletion is the object "chat.completion".
type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage"`
	SystemFingerprint *string      `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMsg       `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatChunk is the object "chat.completion.chunk" of a stream.
type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             any               `json:"usage,omitempty"` // see usageField
	SystemFingerprint *string           `json:"system_fingerprint"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// chatDelta carries the role in a choice's first chunk only.
type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

// chatLogprobs is OpenAI's {content: [...]} form.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string        `json:"token"`
	Logprob     float64       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []chatTopItem `json:"top_logprobs"`
}

type chatTopItem struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// textCompletion is the object "text_completion", whole or as a chunk.
type textCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []textChoice `json:"choices"`
	Usage             any          `json:"usage,omitempty"` // see usageField
	SystemFingerprint *string      `json:"system_fingerprint"`
}

type textChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"`
	Logprobs     *textLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// textLogprobs is the legacy completions form: parallel lists.
type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// byteInts writes b as the list of integers OpenAI's bytes field holds
// (encoding/json would write a []byte as base64).
func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// modelList is GET /v1/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

// usageField is a chunk's usage: absent without include_usage, null on
// every chunk but the last with it, and the usage on the last. A nil
// *usage inside the interface marshals as null, where a nil interface is
// omitted.
func usageField(includeUsage bool, u *usage) any {
	if !includeUsage {
		return nil
	}
	return u
}
