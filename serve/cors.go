package serve

import (
	"net/http"
	"slices"
)

// corsAllowHeaders is the preflight's Access-Control-Allow-Headers:
// llama.cpp's "*", plus Authorization, which the Fetch standard's
// wildcard does not cover (a browser sending the API key needs it named).
const corsAllowHeaders = "*, Authorization"

// cors applies Config.CORSOrigins to r and reports whether it answered
// r itself. With no origins configured it does nothing: no CORS header
// is sent, so browsers keep other sites out. Otherwise a request from an
// allowed origin gets Access-Control-Allow-Origin naming it, and a
// preflight (OPTIONS with an Origin) is answered as llama.cpp's server
// answers it, before the API-key check (a browser sends no key with a
// preflight): 200, empty, Access-Control-Allow-Credentials true,
// Allow-Methods "GET, POST". A preflight from another origin is a 403.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	if len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	origin := r.Header.Get("Origin")
	h := w.Header()
	h.Add("Vary", "Origin")
	allowed := origin != "" && (slices.Contains(s.cfg.CORSOrigins, origin) || slices.Contains(s.cfg.CORSOrigins, "*"))
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	if r.Method != http.MethodOptions || origin == "" {
		return false
	}
	if !allowed {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: typeInvalid,
			Message: "this origin may not call the API (--cors-origin)", Code: "cors_origin_not_allowed"})
		return true
	}
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return true
}
