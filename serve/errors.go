package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error the client sees, in OpenAI's error object:
// {"error":{"message","type","param","code"}} with an HTTP status.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // the offending field, or null
	Code    any    `json:"code"`  // a machine-readable code, or null
	// RetryAfter, when > 0, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

// The error types are OpenAI's (and vLLM's) names for each status.
const (
	typeInvalid     = "invalid_request_error"
	typeAuth        = "authentication_error"
	typeNotFound    = "not_found_error"
	typeOverloaded  = "service_unavailable_error"
	typeServerError = "server_error"
)

// badParam is a 400 naming the request field that was wrong; param ""
// names none (OpenAI's null).
func badParam(param, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = param
	}
	return e
}

// unsupported is the 400 for a field Stride knows but cannot honour: it is
// refused rather than silently dropped, so a client never believes it got
// JSON mode or tool calls when it did not.
func unsupported(param string) *apiError {
	e := badParam(param, "%s is not supported by this server", param)
	e.Code = "unsupported_parameter"
	return e
}

// contextExceeded is the 400 for a prompt plus max_tokens over the
// model's context, with OpenAI's code.
func contextExceeded(prompt, maxTokens, maxLen int) *apiError {
	e := badParam("messages", "this model's maximum context length is %d tokens; the request has %d prompt tokens and asks for %d more", maxLen, prompt, maxTokens)
	e.Code = "context_length_exceeded"
	return e
}

// overloaded is the 503 a client should retry after retryAfter seconds.
func overloaded(msg string, retryAfter int) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeOverloaded, Message: msg, RetryAfter: retryAfter}
}

func notFound(msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Message: msg}
}

// internalError is the 500 of a bug; the message says nothing of the
// server's internals.
func internalError() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: typeServerError,
		Message: "internal server error; the server logged the cause"}
}

// asAPIError turns any error into what the client is told: an apiError
// as it is, anything else a 500.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return internalError()
}

// errorBody is the JSON of the error object.
func errorBody(e *apiError) []byte {
	b, err := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	if err != nil { // cannot happen: every field is a string, number or nil
		return []byte(`{"error":{"message":"internal server error","type":"server_error","param":null,"code":null}}`)
	}
	return b
}

// writeError sends e as the whole response.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	w.Write(append(errorBody(e), '\n'))
}
