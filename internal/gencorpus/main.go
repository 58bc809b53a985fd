package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// record is one line of godoc.jsonl, in the "index.record" schema.
type record struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata"`
}

func main() {
	goroot := flag.String("goroot", "", "Go tree to read (its src and LICENSE); default $(go env GOROOT)")
	out := flag.String("out", "corpus", "directory to write godoc.jsonl and LICENSE-go into")
	maxBytes := flag.Int("max-bytes", 24000, "bound on one package's text; past it declarations keep only their first sentence, then are cut")
	flag.Parse()
	if err := run(*goroot, *out, *maxBytes); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func run(goroot, out string, maxBytes int) error {
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("go env GOROOT: %w (or pass -goroot)", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	src := filepath.Join(goroot, "src")
	paths, err := packages(src)
	if err != nil {
		return err
	}
	var recs []record
	for _, ip := range paths {
		rec, ok, err := document(src, ip, maxBytes)
		if err != nil {
			return fmt.Errorf("%s: %w", ip, err)
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "godoc.jsonl"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	license, err := os.ReadFile(filepath.Join(goroot, "LICENSE"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "LICENSE-go"), license, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gencorpus: %d packages, %d bytes, from %s (%s)\n", len(recs), buf.Len(), goroot, runtime.Version())
	return nil
}

// packages lists the import paths under src, sorted, leaving out
// internal, vendor, cmd and testdata trees.
func packages(src string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(src, path)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		name := d.Name()
		if name == "internal" || name == "vendor" || name == "testdata" || rel == "cmd" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		out = append(out, rel)
		return nil
	})
	slices.Sort(out)
	return out, err
}

// document builds one package's record; ok is false for a directory
// without an importable, documented package.
func document(src, importPath string, maxBytes int) (record, bool, error) {
	dir := filepath.Join(src, filepath.FromSlash(importPath))
	bp, err := build.Default.ImportDir(dir, build.ImportComment)
	if err != nil {
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return record{}, false, nil
		}
		return record{}, false, err
	}
	if bp.Name == "main" || bp.Name == "documentation" {
		return record{}, false, nil
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return record{}, false, err
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		return record{}, false, err
	}
	if strings.TrimSpace(pkg.Doc) == "" {
		return record{}, false, nil
	}
	text := render(fset, pkg, maxBytes)
	return record{
		ID:    "go/" + importPath,
		Title: fmt.Sprintf("package %s (%s)", pkg.Name, importPath),
		Text:  text,
		Metadata: map[string]string{
			"source":      "Go standard library documentation",
			"license":     "BSD-3-Clause",
			"import_path": importPath,
		},
	}, true, nil
}
