package a2aagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidEndpoint is returned (wrapped, with the offending part named)
// for an endpoint that cannot be used: a bad URL, an unknown option, a
// header whose value does not come from the environment.
var ErrInvalidEndpoint = errors.New("a2aagent: invalid endpoint")

// Endpoint is one remote A2A agent as configured: where it is, the prefix
// of its capabilities, and the headers sent with every request to it. The
// zero value is not usable; build one with ParseEndpoint or LoadEndpoints,
// or fill it and call Validate.
type Endpoint struct {
	// URL is the agent's base URL (its card is at
	// URL/.well-known/agent-card.json) or the card's own URL (a path
	// ending in ".json").
	URL string `json:"url"`
	// Prefix is put before every skill's id to make its capability
	// ("ext_" + "summarize" → "ext_summarize"); empty by default.
	Prefix string `json:"prefix,omitempty"`
	// HeadersEnv maps a header name to the environment variable holding
	// its value ({"Authorization": "AGENT_TOKEN"}, the variable holding
	// "Bearer …").
	HeadersEnv map[string]string `json:"headers_env,omitempty"`
}

var (
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	prefixForm = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
)

// reservedHeaders are set by the HTTP client and the JSON-RPC transport;
// an endpoint may not override them.
var reservedHeaders = []string{"Host", "Content-Type", "Content-Length", "Accept", "Transfer-Encoding", "Connection"}

// ParseEndpoint reads the --a2a-agent syntax:
//
//	URL[;prefix=PREFIX][;header=NAME:env:VARIABLE]...
//
// for example "https://agents.example.com/research;prefix=ext_;header=Authorization:env:RESEARCH_TOKEN".
// A header's value is always read from an environment variable when the
// agent is connected, so that no secret sits in a command line.
func ParseEndpoint(s string) (Endpoint, error) {
	parts := strings.Split(strings.TrimSpace(s), ";")
	e := Endpoint{URL: strings.TrimSpace(parts[0])}
	for _, opt := range parts[1:] {
		opt = strings.TrimSpace(opt)
		key, val, _ := strings.Cut(opt, "=")
		switch key {
		case "prefix":
			if e.Prefix != "" {
				return Endpoint{}, fmt.Errorf("%w: %q: prefix given twice", ErrInvalidEndpoint, s)
			}
			e.Prefix = val
		case "header":
			name, source, ok := strings.Cut(val, ":")
			envVar, isEnv := strings.CutPrefix(source, "env:")
			if !ok || !isEnv {
				return Endpoint{}, fmt.Errorf("%w: %q: header option %q: want header=NAME:env:VARIABLE (values come only from the environment, so secrets stay off the command line)", ErrInvalidEndpoint, s, opt)
			}
			if e.HeadersEnv == nil {
				e.HeadersEnv = map[string]string{}
			}
			if _, dup := e.HeadersEnv[http.CanonicalHeaderKey(name)]; dup {
				return Endpoint{}, fmt.Errorf("%w: %q: header %s given twice", ErrInvalidEndpoint, s, name)
			}
			e.HeadersEnv[http.CanonicalHeaderKey(name)] = envVar
		default:
			return Endpoint{}, fmt.Errorf("%w: %q: unknown option %q (known: prefix=PREFIX, header=NAME:env:VARIABLE)", ErrInvalidEndpoint, s, opt)
		}
	}
	if err := e.Validate(); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// LoadEndpoints reads a JSON file holding a list of endpoints:
//
//	[{"url": "https://agents.example.com/research", "prefix": "ext_",
//	  "headers_env": {"Authorization": "RESEARCH_TOKEN"}}]
func LoadEndpoints(path string) ([]Endpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("a2aagent: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var list []Endpoint
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("%w: %s: want a JSON list of {\"url\", \"prefix\", \"headers_env\"}: %w", ErrInvalidEndpoint, path, err)
	}
	var errs []error
	for i := range list {
		canon := map[string]string{}
		for k, v := range list[i].HeadersEnv {
			canon[http.CanonicalHeaderKey(k)] = v
		}
		list[i].HeadersEnv = canon
		if err := list[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: entry %d: %w", path, i+1, err))
		}
	}
	return list, errors.Join(errs...)
}

// Validate reports every problem with e.
func (e Endpoint) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: "+format, append([]any{ErrInvalidEndpoint, e.URL}, args...)...))
	}
	u, err := url.Parse(e.URL)
	switch {
	case e.URL == "":
		errs = append(errs, fmt.Errorf("%w: no URL", ErrInvalidEndpoint))
	case err != nil:
		bad("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		bad("want an http:// or https:// URL")
	case u.Host == "":
		bad("no host")
	case u.User != nil:
		bad("credentials in the URL: send them in a header from the environment (header=Authorization:env:VARIABLE)")
	case u.Fragment != "" || u.RawQuery != "":
		bad("a query or fragment has no meaning here")
	}
	if e.Prefix != "" && !prefixForm.MatchString(e.Prefix) {
		bad("prefix %q: want lowercase letters, digits, '_' or '-', starting with a letter or digit, at most 32", e.Prefix)
	}
	for _, name := range slices.Sorted(maps.Keys(e.HeadersEnv)) {
		switch v := e.HeadersEnv[name]; {
		case !headerName.MatchString(name):
			bad("header name %q is not an HTTP token", name)
		case slices.Contains(reservedHeaders, http.CanonicalHeaderKey(name)):
			bad("header %s is set by the client itself", name)
		case !envName.MatchString(v):
			bad("header %s: %q is not an environment variable name", name, v)
		}
	}
	return errors.Join(errs...)
}

// headers reads the endpoint's header values from the environment.
func (e Endpoint) headers(getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(e.HeadersEnv)) {
		v := getenv(e.HeadersEnv[name])
		if v == "" {
			errs = append(errs, fmt.Errorf("a2aagent: %s: header %s: environment variable %s is not set", e.URL, name, e.HeadersEnv[name]))
			continue
		}
		h.Set(name, v)
	}
	return h, errors.Join(errs...)
}

// cardLocation splits e.URL into the base URL the resolver is given and
// the card's path under it.
func (e Endpoint) cardLocation() (base, path string) {
	u, err := url.Parse(e.URL)
	if err != nil || !strings.HasSuffix(u.Path, ".json") {
		return strings.TrimSuffix(e.URL, "/"), defaultCardPath
	}
	path = u.Path
	u.Path, u.RawPath = "", ""
	return u.String(), path
}

// defaultCardPath is where A2A puts an agent's card under its base URL.
const defaultCardPath = "/.well-known/agent-card.json"

// String is the endpoint without its headers' variable names.
func (e Endpoint) String() string {
	if e.Prefix == "" {
		return e.URL
	}
	return e.URL + ";prefix=" + e.Prefix
}
