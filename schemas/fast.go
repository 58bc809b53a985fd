package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path. A stored event is validated again by every reader that
// decodes it (each WebSocket replaying a workflow decodes every event), and
// the general validator costs about 5 µs for a progress event: it decodes
// the document into maps and compares every number as a big.Rat. Most
// schemas use a handful of keywords, which fastSchema checks on the JSON
// bytes themselves, without a decode and without allocating.
//
// It only ever says yes for sure: a document it accepts is one the general
// validator accepts (FuzzFastAgrees checks this on every schema). Anything
// it does not know for certain — a keyword outside its subset (the schema
// then has no fast path at all), a number on the very edge of a bound, an
// integer written 1.0 — it declines, and the general validator decides,
// and names the problems when there are any.

// draft202012 is the only $schema the fast path compiles: earlier drafts
// assert "format", which it does not check.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// fastSchema is a JSON Schema compiled to the subset the fast path checks.
// nil is the schema true (anything).
type fastSchema struct {
	never    bool   // the schema false
	typ      string // "" any, else a JSON Schema type name
	required []string
	props    map[string]*fastSchema
	patProps []patProp
	// addl applies to properties neither props nor patProps name; nil
	// with noAddl false allows them.
	addl   *fastSchema
	noAddl bool
	enum   []string // string values only; nil: no enum
	// numeric bounds, nil when absent
	min, max, xmin, xmax *bound
	minLen, maxLen       int // -1: none
	minItems, maxItems   int // -1: none
	pattern              *regexp.Regexp
	items                *fastSchema
	hasItems             bool
	unique               bool // uniqueItems: the fast path checks arrays of strings only
	// maxProps is maxProperties (-1: none; no minProperties: a duplicate
	// key counts twice here, once for the general validator).
	maxProps int
	// depReq and depSchemas are dependentRequired and dependentSchemas:
	// when the object has the key, it has those too, or matches that.
	depReq     map[string][]string
	depSchemas map[string]*fastSchema
	// anyOf's alternatives (nil: no anyOf) and a $ref's schema, which
	// apply beside the keywords above, whatever the value's type.
	anyOf  []*fastSchema
	ref    *fastSchema
	hasRef bool
}

// refFunc compiles the fast schema a "$ref" names; ok is false when it
// cannot (not a schema beside this one, outside the subset, a cycle).
type refFunc func(ref string) (fs *fastSchema, ok bool)

type patProp struct {
	re *regexp.Regexp
	s  *fastSchema
}

// bound is a numeric keyword's value: exact as an int64 when it is an
// integer that fits, else the float64 nearest to it.
type bound struct {
	i     int64
	isInt bool
	f     float64
}

// compileFast compiles a schema document (JSON) to the fast subset; ok is
// false when it uses anything outside it. A "$ref" is outside it.
func compileFast(doc []byte) (fs *fastSchema, ok bool) { return compileFastRefs(doc, nil) }

// compileFastRefs is compileFast with the "$ref"s resolve compiles
// (nil: none).
func compileFastRefs(doc []byte, resolve refFunc) (fs *fastSchema, ok bool) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if m, isMap := v.(map[string]any); isMap {
		if s, has := m["$schema"]; has && s != draft202012 {
			return nil, false
		}
	}
	return compileNode(v, true, resolve)
}

func compileNode(v any, root bool, resolve refFunc) (*fastSchema, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return nil, true
		}
		return &fastSchema{never: true}, true
	case map[string]any:
		s := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, maxProps: -1}
		for k, kv := range v {
			if !s.compileKeyword(k, kv, root, resolve) {
				return nil, false
			}
		}
		if len(v) == 0 {
			return nil, true
		}
		return s, true
	}
	return nil, false
}

// compileKeyword adds one keyword to s; false if the fast path does not
// know it (or its value has a shape it does not handle).
func (s *fastSchema) compileKeyword(k string, v any, root bool, resolve refFunc) bool {
	var ok bool
	switch k {
	case "$schema", "$id":
		return root // elsewhere they change how references resolve
	case "title", "description", "$comment", "examples", "default", "format":
		return true // annotations (format is not asserted in 2020-12)
	case "type":
		s.typ, ok = v.(string)
		switch s.typ {
		case "null", "boolean", "object", "array", "number", "integer", "string":
			return ok
		}
		return false
	case "required":
		s.required, ok = stringList(v)
		return ok
	case "properties":
		s.props, ok = schemaMap(v, resolve)
		return ok
	case "patternProperties":
		m, isMap := v.(map[string]any)
		if !isMap {
			return false
		}
		for p, sub := range m {
			re, err := regexp.Compile(p)
			if err != nil {
				return false
			}
			c, ok := compileNode(sub, false, resolve)
			if !ok {
				return false
			}
			s.patProps = append(s.patProps, patProp{re: re, s: c})
		}
		return true
	case "additionalProperties":
		if s.addl, ok = compileNode(v, false, resolve); !ok {
			return false
		}
		s.noAddl = s.addl != nil && s.addl.never
		return true
	case "enum":
		arr, isArr := v.([]any)
		if !isArr || len(arr) == 0 {
			return false
		}
		s.enum = make([]string, 0, len(arr))
		for _, e := range arr {
			str, isStr := e.(string)
			if !isStr {
				return false
			}
			s.enum = append(s.enum, str)
		}
		return true
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		n, isNum := v.(json.Number)
		if !isNum {
			return false
		}
		b, ok := parseBound(string(n))
		if !ok {
			return false
		}
		switch k {
		case "minimum":
			s.min = b
		case "maximum":
			s.max = b
		case "exclusiveMinimum":
			s.xmin = b
		default:
			s.xmax = b
		}
		return true
	case "minLength", "maxLength", "minItems", "maxItems", "maxProperties":
		n, isNum := v.(json.Number)
		if !isNum {
			return false
		}
		i, err := strconv.Atoi(string(n))
		if err != nil || i < 0 {
			return false
		}
		switch k {
		case "minLength":
			s.minLen = i
		case "maxLength":
			s.maxLen = i
		case "minItems":
			s.minItems = i
		case "maxItems":
			s.maxItems = i
		default:
			s.maxProps = i
		}
		return true
	case "dependentRequired":
		m, isMap := v.(map[string]any)
		if !isMap {
			return false
		}
		s.depReq = make(map[string][]string, len(m))
		for name, req := range m {
			if s.depReq[name], ok = stringList(req); !ok {
				return false
			}
		}
		return true
	case "dependentSchemas":
		s.depSchemas, ok = schemaMap(v, resolve)
		return ok
	case "pattern":
		p, isStr := v.(string)
		if !isStr {
			return false
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return false
		}
		s.pattern = re
		return true
	case "uniqueItems":
		s.unique, ok = v.(bool)
		return ok
	case "anyOf":
		arr, isArr := v.([]any)
		if !isArr || len(arr) == 0 {
			return false
		}
		for _, alt := range arr {
			a, ok := compileNode(alt, false, resolve)
			if !ok {
				return false
			}
			s.anyOf = append(s.anyOf, a)
		}
		return true
	case "$ref":
		ref, isStr := v.(string)
		if !isStr || resolve == nil {
			return false
		}
		s.ref, ok = resolve(ref)
		s.hasRef = ok
		return ok
	case "items":
		if s.items, ok = compileNode(v, false, resolve); !ok {
			return false
		}
		s.hasItems = true
		return true
	}
	return false
}

// stringList is a keyword's array of strings.
func stringList(v any) ([]string, bool) {
	arr, isArr := v.([]any)
	if !isArr {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, r := range arr {
		name, isStr := r.(string)
		if !isStr {
			return nil, false
		}
		out = append(out, name)
	}
	return out, true
}

// schemaMap is a keyword's object of subschemas, by name.
func schemaMap(v any, resolve refFunc) (map[string]*fastSchema, bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, false
	}
	out := make(map[string]*fastSchema, len(m))
	for name, sub := range m {
		c, ok := compileNode(sub, false, resolve)
		if !ok {
			return nil, false
		}
		out[name] = c
	}
	return out, true
}

func parseBound(lit string) (*bound, bool) {
	if i, ok := parseInt(lit); ok {
		return &bound{i: i, isInt: true, f: float64(i)}, true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, false
	}
	return &bound{f: f}, true
}

// parseInt parses a JSON integer literal (no fraction, no exponent) of at
// most 18 digits, exactly.
func parseInt(lit string) (int64, bool) {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(lit, 10, 64)
	return i, err == nil
}

// cmpBound compares a number literal with a bound: -1, 0 or 1, or ok
// false when it cannot say for sure. Rounding to float64 is monotonic, so a
// strict order of the rounded values is the order of the exact ones; equal
// rounded values say nothing unless both are exact integers.
func cmpBound(lit []byte, b *bound) (c int, ok bool) {
	if b.isInt {
		if i, isInt := parseInt(string(lit)); isInt {
			switch {
			case i < b.i:
				return -1, true
			case i > b.i:
				return 1, true
			}
			return 0, true
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return 0, false
	}
	switch {
	case f < b.f:
		return -1, true
	case f > b.f:
		return 1, true
	}
	return 0, false
}

// accepts reports whether data, which must be valid JSON (json.Valid),
// is for sure valid against s.
func (s *fastSchema) accepts(data []byte) bool {
	i, ok := s.value(data, skipWS(data, 0))
	return ok && skipWS(data, i) == len(data)
}

// value checks the value starting at data[i] against s and returns the
// index just past it.
func (s *fastSchema) value(data []byte, i int) (int, bool) {
	if s == nil {
		return skipValue(data, i), true
	}
	if s.never {
		return 0, false
	}
	end, ok := s.own(data, i)
	if !ok {
		return 0, false
	}
	if s.hasRef {
		if _, ok := s.ref.value(data, i); !ok {
			return 0, false
		}
	}
	if s.anyOf != nil {
		for _, a := range s.anyOf {
			if _, ok := a.value(data, i); ok {
				return end, true
			}
		}
		return 0, false
	}
	return end, true
}

// own checks the value starting at data[i] against s's keywords but
// anyOf and $ref.
func (s *fastSchema) own(data []byte, i int) (int, bool) {
	switch data[i] {
	case '{':
		if !s.typeIs("object") {
			return 0, false
		}
		return s.object(data, i)
	case '[':
		if !s.typeIs("array") {
			return 0, false
		}
		return s.array(data, i)
	case '"':
		if !s.typeIs("string") {
			return 0, false
		}
		return s.str(data, i)
	case 't', 'f':
		end := i + 4
		if data[i] == 'f' {
			end++
		}
		return end, s.typeIs("boolean") && s.enum == nil
	case 'n':
		return i + 4, s.typeIs("null") && s.enum == nil
	}
	return s.number(data, i)
}

func (s *fastSchema) typeIs(t string) bool { return s.typ == "" || s.typ == t }

func (s *fastSchema) object(data []byte, i int) (int, bool) {
	if s.enum != nil {
		return 0, false
	}
	var seen uint64 // the required properties found, by index (at most 64)
	if len(s.required) > 64 {
		return 0, false
	}
	start, n := i, 0
	deps := len(s.depReq) > 0 || len(s.depSchemas) > 0
	var kbuf [16][]byte
	keys := kbuf[:0] // with dependencies, the keys found
	i = skipWS(data, i+1)
	if data[i] == '}' {
		return i + 1, len(s.required) == 0
	}
	for {
		kEnd, raw := scanString(data, i)
		key, ok := stringValue(data[i:kEnd], raw)
		if !ok {
			return 0, false
		}
		n++
		if deps {
			keys = append(keys, key)
		}
		i = skipWS(data, kEnd)
		i = skipWS(data, i+1) // ':'
		for r, name := range s.required {
			if name == string(key) {
				seen |= 1 << r
			}
		}
		matched := false
		if sub, has := s.props[string(key)]; has {
			matched = true
			if _, ok := sub.value(data, i); !ok {
				return 0, false
			}
		}
		for _, pp := range s.patProps {
			if pp.re.Match(key) {
				matched = true
				if _, ok := pp.s.value(data, i); !ok {
					return 0, false
				}
			}
		}
		if !matched && (s.noAddl || s.addl != nil) {
			if _, ok := s.addl.value(data, i); !ok {
				return 0, false
			}
		}
		i = skipWS(data, skipValue(data, i))
		if data[i] == '}' {
			i++
			break
		}
		i = skipWS(data, i+1) // ','
	}
	if s.maxProps >= 0 && n > s.maxProps {
		return 0, false
	}
	has := func(name string) bool {
		return slices.ContainsFunc(keys, func(k []byte) bool { return string(k) == name })
	}
	for name, req := range s.depReq {
		if has(name) {
			for _, r := range req {
				if !has(r) {
					return 0, false
				}
			}
		}
	}
	for name, sub := range s.depSchemas {
		if has(name) {
			if _, ok := sub.value(data, start); !ok {
				return 0, false
			}
		}
	}
	return i, seen == 1<<len(s.required)-1
}

func (s *fastSchema) array(data []byte, i int) (int, bool) {
	if s.enum != nil {
		return 0, false
	}
	n := 0
	var buf [16][]byte
	seen := buf[:0] // with uniqueItems, the strings so far
	i = skipWS(data, i+1)
	if data[i] == ']' {
		i++
	} else {
		for {
			n++
			end, ok := s.items.value(data, i)
			if !ok {
				return 0, false
			}
			if s.unique {
				if data[i] != '"' {
					return 0, false // other values compare by the general validator's rules
				}
				_, raw := scanString(data, i)
				v, ok := stringValue(data[i:end], raw)
				if !ok {
					return 0, false
				}
				for _, p := range seen {
					if bytes.Equal(p, v) {
						return 0, false
					}
				}
				seen = append(seen, v)
			}
			i = skipWS(data, end)
			if data[i] == ']' {
				i++
				break
			}
			i = skipWS(data, i+1) // ','
		}
	}
	if (s.minItems >= 0 && n < s.minItems) || (s.maxItems >= 0 && n > s.maxItems) {
		return 0, false
	}
	return i, true
}

func (s *fastSchema) str(data []byte, i int) (int, bool) {
	end, raw := scanString(data, i)
	if s.enum == nil && s.pattern == nil && s.minLen < 0 && s.maxLen < 0 {
		return end, true
	}
	v, ok := stringValue(data[i:end], raw)
	if !ok {
		return 0, false
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			if e == string(v) {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	if s.minLen >= 0 || s.maxLen >= 0 {
		n := utf8.RuneCount(v)
		if (s.minLen >= 0 && n < s.minLen) || (s.maxLen >= 0 && n > s.maxLen) {
			return 0, false
		}
	}
	if s.pattern != nil && !s.pattern.Match(v) {
		return 0, false
	}
	return end, true
}

func (s *fastSchema) number(data []byte, i int) (int, bool) {
	end := i
	frac := false
	for end < len(data) {
		c := data[end]
		if c == '.' || c == 'e' || c == 'E' {
			frac = true
		} else if (c < '0' || c > '9') && c != '-' && c != '+' {
			break
		}
		end++
	}
	if s.enum != nil || !s.typeIs("number") && !(s.typ == "integer" && !frac) {
		return 0, false // 1.0 is an integer too, but the general validator says so
	}
	lit := data[i:end]
	check := func(b *bound, okIf func(int) bool) bool {
		if b == nil {
			return true
		}
		c, ok := cmpBound(lit, b)
		return ok && okIf(c)
	}
	if !check(s.min, func(c int) bool { return c >= 0 }) || !check(s.max, func(c int) bool { return c <= 0 }) ||
		!check(s.xmin, func(c int) bool { return c > 0 }) || !check(s.xmax, func(c int) bool { return c < 0 }) {
		return 0, false
	}
	return end, true
}

// scanString returns the index just past the string starting at data[i]
// (a quote), and whether it must be decoded (an escape or a byte beyond
// ASCII) rather than read as it stands.
func scanString(data []byte, i int) (end int, raw bool) {
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '\\':
			raw = true
			j++
		case c == '"':
			return j + 1, raw
		case c >= utf8.RuneSelf:
			raw = true
		}
	}
	return len(data), raw
}

// stringValue is what a JSON string literal (quotes included) decodes
// to, as encoding/json decodes it: the literal's own bytes, not a copy,
// when it has no escapes. Callers compare it (string(v) in a comparison
// or a map index does not allocate) and never keep it.
func stringValue(lit []byte, raw bool) ([]byte, bool) {
	if !raw {
		return lit[1 : len(lit)-1], true
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

// skipValue returns the index just past the (valid) JSON value at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		end, _ := scanString(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := scanString(data, j)
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// String describes s for tests and debugging.
func (s *fastSchema) String() string {
	if s == nil {
		return "true"
	}
	return fmt.Sprintf("fast{type %q, %d properties, required %v}", s.typ, len(s.props), s.required)
}

// fastSchemas compiles the fast path of every schema in docs (by file
// name) that has one, keyed by name without ".json". A "$ref" may name
// another file of docs: they all share one base URI, so "plan.json" is
// that file; anything else, or a cycle, leaves the schema without a fast
// path.
func fastSchemas(docs map[string][]byte) map[string]*fastSchema {
	type result struct {
		fs *fastSchema
		ok bool
	}
	done := map[string]result{}
	compiling := map[string]bool{}
	var compile func(file string) (*fastSchema, bool)
	compile = func(file string) (*fastSchema, bool) {
		if r, has := done[file]; has {
			return r.fs, r.ok
		}
		doc, has := docs[file]
		if !has || compiling[file] {
			return nil, false
		}
		compiling[file] = true
		fs, ok := compileFastRefs(doc, compile)
		delete(compiling, file)
		done[file] = result{fs, ok}
		return fs, ok
	}
	out := map[string]*fastSchema{}
	for file := range docs {
		if !strings.HasSuffix(file, ".json") {
			continue
		}
		if fs, ok := compile(file); ok {
			out[strings.TrimSuffix(file, ".json")] = fs
		}
	}
	return out
}
