package mcptool

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// ErrBadSpec is wrapped by the errors of ParseSpec.
var ErrBadSpec = errors.New("mcptool: bad server spec")

// Server says how to reach one MCP server: by a command over stdio
// (Command), or over streamable HTTP (URL, with Headers).
type Server struct {
	// Name names the server in capabilities (tool_<name>_<tool>): 1–24 of
	// a-z, 0-9 and '-', starting with a letter or digit.
	Name string
	// Command is the program and its arguments of a stdio server.
	Command []string
	// URL is the endpoint of a streamable HTTP server.
	URL string
	// Headers are sent with every HTTP request (an Authorization, say).
	Headers http.Header
}

// namePattern is a server name: no '_', so that tool_<server>_<tool>
// splits unambiguously, and short enough to leave room for the tool.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// SpecSyntax is the syntax of a spec, for flag help and errors.
const SpecSyntax = "NAME=stdio:COMMAND [ARG...] or NAME=http(s)://HOST/PATH"

// HeadersEnv is the environment variable that holds the HTTP headers of
// server name: AGENTBUS_MCP_HEADERS_<NAME>, the name upper-cased with
// '-' as '_'.
func HeadersEnv(name string) string {
	return "AGENTBUS_MCP_HEADERS_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ParseSpec reads a server spec, NAME=stdio:COMMAND [ARG...] (the command
// line split on spaces, with '…' and "…" quoting and \ escapes) or
// NAME=http(s)://HOST/PATH. An HTTP server's headers come from the
// environment variable HeadersEnv(NAME), read with getenv (nil: none),
// as comma-separated Key=Value pairs whose values are URL-decoded
// (Authorization=Bearer%20secret) — secrets stay off command lines.
func ParseSpec(spec string, getenv func(string) string) (Server, error) {
	name, target, ok := strings.Cut(spec, "=")
	if !ok {
		return Server{}, fmt.Errorf("%w %q: want %s", ErrBadSpec, spec, SpecSyntax)
	}
	if !namePattern.MatchString(name) {
		return Server{}, fmt.Errorf("%w %q: server name %q must be 1-24 of a-z, 0-9 and '-' (no '_': it separates the server from the tool in tool_<server>_<tool>)", ErrBadSpec, spec, name)
	}
	s := Server{Name: name}
	switch {
	case strings.HasPrefix(target, "stdio:"):
		args, err := splitCommand(strings.TrimPrefix(target, "stdio:"))
		if err != nil {
			return Server{}, fmt.Errorf("%w %q: %w", ErrBadSpec, spec, err)
		}
		if len(args) == 0 {
			return Server{}, fmt.Errorf("%w %q: stdio: needs a command", ErrBadSpec, spec)
		}
		s.Command = args
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return Server{}, fmt.Errorf("%w %q: %q is not an http(s) URL with a host", ErrBadSpec, spec, target)
		}
		s.URL = target
		if getenv != nil {
			if s.Headers, err = parseHeaders(getenv(HeadersEnv(name))); err != nil {
				return Server{}, fmt.Errorf("%w %q: %s: %w", ErrBadSpec, spec, HeadersEnv(name), err)
			}
		}
	default:
		return Server{}, fmt.Errorf("%w %q: %q is neither stdio:COMMAND nor an http(s) URL; want %s", ErrBadSpec, spec, target, SpecSyntax)
	}
	return s, nil
}

// parseHeaders reads "Key=Value,Key2=Value2", values URL-decoded.
func parseHeaders(v string) (http.Header, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	h := http.Header{}
	for pair := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not Key=Value", pair)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		h.Add(k, dec)
	}
	return h, nil
}

// splitCommand splits a command line on unquoted spaces; '…' quotes
// literally, "…" quotes with \ escapes, and \ escapes outside quotes.
func splitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inArg = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ' || r == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c in the command", quote)
	}
	if escaped {
		return nil, errors.New("the command ends with a lone \\")
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
