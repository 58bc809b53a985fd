package vespa_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/vespa"
)

var update = flag.Bool("update", false, "rewrite schemas/vespa from the templates")

// committedDir is the application package in the repository.
const committedDir = "../../schemas/vespa"

// TestCommittedPackageMatchesTemplates keeps schemas/vespa the rendering
// for tenant "default", so the committed files and the generator never
// drift (go test -update rewrites them).
func TestCommittedPackageMatchesTemplates(t *testing.T) {
	files, err := vespa.ApplicationPackage([]string{vespa.DefaultTenant}, 256)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := vespa.WriteApplicationPackage(committedDir, []string{vespa.DefaultTenant}, 256); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(committedDir, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v (go test ./retrieval/vespa -run TestCommittedPackage -update writes it)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its template rendering; run go test ./retrieval/vespa -run TestCommittedPackage -update", name)
		}
	}
	// No stale schemas: every committed .sd is one the generator makes.
	sds, _ := filepath.Glob(filepath.Join(committedDir, "schemas", "*.sd"))
	for _, sd := range sds {
		if _, ok := files["schemas/"+filepath.Base(sd)]; !ok {
			t.Errorf("%s is committed but not rendered for tenant %q", sd, vespa.DefaultTenant)
		}
	}
}

func TestApplicationPackage(t *testing.T) {
	files, err := vespa.ApplicationPackage([]string{"globex", "acme-eu", "acme_eu", "globex"}, 384)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"schemas/chunk_acme__eu.sd", "schemas/chunk_acme_heu.sd", "schemas/chunk_globex.sd", "services.xml"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	// services.xml is well-formed XML listing each document type once.
	var svc struct {
		Container struct {
			DocumentAPI *struct{} `xml:"document-api"`
			Search      *struct{} `xml:"search"`
		} `xml:"container"`
		Content struct {
			Docs []struct {
				Type string `xml:"type,attr"`
				Mode string `xml:"mode,attr"`
			} `xml:"documents>document"`
		} `xml:"content"`
	}
	if err := xml.Unmarshal(files["services.xml"], &svc); err != nil {
		t.Fatalf("services.xml: %v", err)
	}
	if svc.Container.DocumentAPI == nil || svc.Container.Search == nil {
		t.Error("services.xml: container lacks document-api or search")
	}
	var types []string
	for _, d := range svc.Content.Docs {
		if d.Mode != "index" {
			t.Errorf("document %s mode %q, want index", d.Type, d.Mode)
		}
		types = append(types, d.Type)
	}
	// In tenant order: "acme-eu" sorts before "acme_eu".
	if want := []string{"chunk_acme_heu", "chunk_acme__eu", "chunk_globex"}; !slices.Equal(types, want) {
		t.Errorf("services.xml documents %v, want %v", types, want)
	}
	for _, dt := range types {
		sd := string(files["schemas/"+dt+".sd"])
		for _, must := range []string{
			"schema " + dt + " {", "document " + dt + " {",
			"tensor<float>(x[384])", "distance-metric: angular", "hnsw",
			"rank-profile bm25", "bm25(title) + bm25(text)", "index: enable-bm25",
			"rank-profile semantic", "query(q) tensor<float>(x[384])", "closeness(field, embedding)",
			"field metadata type map<string, string>", "field date type long",
		} {
			if !strings.Contains(sd, must) {
				t.Errorf("%s.sd lacks %q", dt, must)
			}
		}
		if !balanced(sd) {
			t.Errorf("%s.sd: unbalanced braces", dt)
		}
	}
}

// balanced reports whether the braces of a schema file pair up.
func balanced(s string) bool {
	depth := 0
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth < 0 {
			return false
		}
	}
	return depth == 0
}

func TestApplicationPackageRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkg  vespa.Package
		want error
	}{
		{"no tenants", vespa.Package{}, vespa.ErrConfig},
		{"bad tenant", vespa.Package{Tenants: []string{"Acme"}}, retrieval.ErrInvalidTenant},
		{"bad schema", vespa.Package{Schema: "9x", Tenants: []string{"a"}}, vespa.ErrConfig},
		{"bad dim", vespa.Package{Tenants: []string{"a"}, Dim: -1}, vespa.ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.pkg.Render(); !errors.Is(err, tc.want) {
				t.Errorf("Render() error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestWriteApplicationPackage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	if err := vespa.WriteApplicationPackage(dir, []string{"acme"}, 256); err != nil {
		t.Fatal(err)
	}
	sd, err := os.ReadFile(filepath.Join(dir, "schemas", "chunk_acme.sd"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^schema chunk_acme \{$`).Match(sd) {
		t.Errorf("chunk_acme.sd does not declare schema chunk_acme:\n%s", sd)
	}
	if _, err := os.Stat(filepath.Join(dir, "services.xml")); err != nil {
		t.Error(err)
	}
}
