package vespa

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/template"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// DefaultTenant is the tenant of the application package committed under
// schemas/vespa.
const DefaultTenant = "default"

// Package describes a Vespa application package for agentbus: one content
// cluster, one schema and document type per tenant.
type Package struct {
	// Schema is the schema name prefix; default "chunk" (Config.Schema).
	Schema string
	// Tenants are the tenants to declare; at least one.
	Tenants []string
	// Dim is the embedding dimension; default 256 (llm.LocalEmbedder).
	Dim int
}

// ApplicationPackage renders the package for tenants with the default
// schema prefix: path inside the package → file contents, i.e.
// "services.xml" and "schemas/chunk_<tenant>.sd" per tenant.
func ApplicationPackage(tenants []string, dim int) (map[string][]byte, error) {
	return Package{Tenants: tenants, Dim: dim}.Render()
}

// WriteApplicationPackage renders the package for tenants into dir (which
// it creates), ready for `vespa deploy dir`.
func WriteApplicationPackage(dir string, tenants []string, dim int) error {
	return Package{Tenants: tenants, Dim: dim}.Write(dir)
}

// Render returns the package's files by path. Tenants are sorted and
// deduplicated so the output depends only on the set.
func (p Package) Render() (map[string][]byte, error) {
	if p.Schema == "" {
		p.Schema = "chunk"
	}
	if p.Dim == 0 {
		p.Dim = 256
	}
	if !identPattern.MatchString(p.Schema) {
		return nil, fmt.Errorf("%w: Schema %q: want a Vespa identifier matching %s", ErrConfig, p.Schema, identPattern)
	}
	if p.Dim < 1 || p.Dim > 65536 {
		return nil, fmt.Errorf("%w: Dim %d: want 1..65536", ErrConfig, p.Dim)
	}
	if len(p.Tenants) == 0 {
		return nil, fmt.Errorf("%w: an application package needs at least one tenant", ErrConfig)
	}
	tenants := slices.Compact(slices.Sorted(slices.Values(p.Tenants)))
	files := make(map[string][]byte, len(tenants)+1)
	doctypes := make([]string, len(tenants))
	for i, tenant := range tenants {
		dt, err := DocType(p.Schema, tenant)
		if err != nil {
			return nil, err
		}
		doctypes[i] = dt
		sd, err := render("schema.sd.tmpl", map[string]any{"Tenant": tenant, "DocType": dt, "Dim": p.Dim})
		if err != nil {
			return nil, err
		}
		files["schemas/"+dt+".sd"] = sd
	}
	svc, err := render("services.xml.tmpl", map[string]any{"Schema": p.Schema, "DocTypes": doctypes})
	if err != nil {
		return nil, err
	}
	files["services.xml"] = svc
	return files, nil
}

// Write renders the package into dir, creating dir and dir/schemas.
func (p Package) Write(dir string) error {
	files, err := p.Render()
	if err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("vespa: writing the application package: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("vespa: writing the application package: %w", err)
		}
	}
	return nil
}

func render(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("vespa: rendering %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
