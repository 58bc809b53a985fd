package main

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/printer"
	"go/token"
	"strings"
)

// decl is one exported function, type or method as a Markdown section.
type decl struct {
	heading string // "## func Parse"
	sig     string // the declaration, one line or a short block
	doc     string // the doc comment as Markdown
	short   string // its first sentence
}

// render writes the package as Markdown: its doc comment (headings at
// level 2), then one "## func"/"## type" section per exported
// declaration, methods and constructors as "###" under their type. When
// the whole would pass maxBytes, declarations keep their first sentence
// only; past that the text is cut at a section boundary.
func render(fset *token.FileSet, pkg *doc.Package, maxBytes int) string {
	plain := func(*comment.DocLink) string { return "" } // links as plain text: URLs are noise to search
	pr := pkg.Printer()
	pr.HeadingLevel = 2
	pr.TextWidth = -1
	pr.DocLinkURL = plain
	head := strings.TrimSpace(string(pr.Markdown(pkg.Parser().Parse(pkg.Doc))))

	var decls []decl
	add := func(level, kind, name string, node ast.Node, text string) {
		sub := pkg.Printer()
		sub.HeadingLevel = 4
		sub.TextWidth = -1
		sub.DocLinkURL = plain
		d := pkg.Parser().Parse(text)
		decls = append(decls, decl{
			heading: level + " " + kind + " " + name,
			sig:     signature(fset, node),
			doc:     strings.TrimSpace(string(sub.Markdown(d))),
			short:   pkg.Synopsis(text),
		})
	}
	for _, f := range pkg.Funcs {
		add("##", "func", f.Name, f.Decl, f.Doc)
	}
	for _, t := range pkg.Types {
		add("##", "type", t.Name, t.Decl, t.Doc)
		for _, f := range t.Funcs {
			add("###", "func", f.Name, f.Decl, f.Doc)
		}
		for _, m := range t.Methods {
			add("###", "func", "("+recv(m.Recv)+") "+m.Name, m.Decl, m.Doc)
		}
	}
	for _, short := range []bool{false, true} {
		if s := join(head, decls, short); len(s) <= maxBytes || short {
			return cut(s, maxBytes)
		}
	}
	return ""
}

func recv(r string) string { return strings.TrimSpace(r) }

func join(head string, decls []decl, short bool) string {
	var b strings.Builder
	b.WriteString(head)
	for _, d := range decls {
		b.WriteString("\n\n" + d.heading + "\n\n" + d.sig)
		text := d.doc
		if short {
			text = d.short
		}
		if text != "" {
			b.WriteString("\n\n" + text)
		}
	}
	return b.String()
}

// cut bounds s to max bytes, ending before the last section heading or
// paragraph that fits.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	if i := strings.LastIndex(s, "\n\n#"); i > max/2 {
		return s[:i]
	}
	if i := strings.LastIndex(s, "\n\n"); i > 0 {
		return s[:i]
	}
	return s
}

// signature prints a declaration without its body; a type whose
// declaration runs long keeps only its first line.
func signature(fset *token.FileSet, node ast.Node) string {
	var buf bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces, Tabwidth: 4}
	if gd, ok := node.(*ast.GenDecl); ok {
		for _, s := range gd.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				node = ts
			}
		}
	}
	if err := cfg.Fprint(&buf, fset, node); err != nil {
		return ""
	}
	s := buf.String()
	if _, ok := node.(*ast.TypeSpec); ok {
		s = "type " + s
		if len(s) > 300 || strings.Count(s, "\n") > 8 {
			first, _, _ := strings.Cut(s, "\n")
			s = strings.TrimSuffix(first, "{") + "{ … }"
		}
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
