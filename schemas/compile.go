package schemas

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrBadSchema is wrapped by Compile's errors: the document is not a JSON
// Schema this package can compile.
var ErrBadSchema = errors.New("schemas: not a usable JSON Schema")

// Schema is a JSON Schema that is not one of the embedded ones — an
// agent's input schema, say, that arrived over the wire. It is compiled
// once by Compile and safe for concurrent use.
type Schema struct {
	name    string
	s       *jsonschema.Schema
	fast    *fastSchema
	hasFast bool
}

// Compile compiles doc, a JSON Schema (draft 2020-12 unless its $schema
// says otherwise), called name in errors. References are resolved within
// doc only: a schema from elsewhere must never make this process read a
// file or the network, so any other $ref fails to compile.
func Compile(name string, doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadSchema, name, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file:, no http:
	const url = base + "compiled/schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadSchema, name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadSchema, name, err)
	}
	f, hasFast := compileFast(doc)
	return &Schema{name: name, s: s, fast: f, hasFast: hasFast}, nil
}

// Validate checks the JSON document data against s: nil, or a
// *ValidationError listing every problem with its JSON pointer.
func (s *Schema) Validate(data []byte) error { return validate(s.name, s.s, s.fast, s.hasFast, data) }
