package ingest

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// extractHTML keeps an HTML page's main content (readability: no
// navigation, footers or ads), as Markdown-like text whose h1–h6 become
// headings the chunker cuts sections at. The page's charset (BOM, <meta>)
// is honoured; a page readability finds no article in is read whole, body
// text only.
func extractHTML(name string, data []byte) (Extracted, error) {
	enc, encName, _ := charset.DetermineEncoding(data, "text/html")
	src := io.Reader(bytes.NewReader(data))
	if encName != "utf-8" {
		src = enc.NewDecoder().Reader(src)
	}
	doc, err := html.Parse(src)
	if err != nil {
		return Extracted{}, &FileError{File: name, Format: FormatHTML, Kind: ErrCorrupt, Reason: "cannot parse the HTML: " + err.Error(), Err: err}
	}
	var title string
	var root *html.Node
	p := readability.NewParser()
	if art, err := p.ParseDocument(doc, nil); err == nil && art.Node != nil {
		title, root = art.Title(), art.Node
	}
	if root == nil || strings.TrimSpace(render.InnerText(root)) == "" {
		root = findBody(doc)
		if title == "" {
			title = findTitle(doc)
		}
	}
	if root == nil {
		return Extracted{}, fileErr(name, FormatHTML, ErrEmpty, "no <body>")
	}
	var b strings.Builder
	writeBlocks(&b, root)
	// A page that says UTF-8 (or says nothing) but is not: its bad bytes
	// pass through the parser; they become U+FFFD here.
	text := strings.ToValidUTF8(b.String(), "\uFFFD")
	title = strings.ToValidUTF8(strings.Join(strings.Fields(title), " "), "\uFFFD")
	return Extracted{Title: title, Sections: []Section{{Text: text}}}, nil
}

// writeBlocks writes n's text: a heading as "## text", each block element
// (paragraph, list item, table row, …) as a paragraph of its own.
func writeBlocks(b *strings.Builder, n *html.Node) {
	if n.Type == html.ElementNode {
		switch n.Data {
		case "script", "style", "noscript", "template", "head":
			return
		case "h1", "h2", "h3", "h4", "h5", "h6":
			if t := strings.Join(strings.Fields(render.InnerText(n)), " "); t != "" {
				fmt.Fprintf(b, "\n\n%s %s\n\n", strings.Repeat("#", int(n.Data[1]-'0')), t)
			}
			return
		case "p", "li", "pre", "blockquote", "tr", "dt", "dd", "figcaption", "caption":
			if t := strings.TrimSpace(render.InnerText(n)); t != "" {
				b.WriteString("\n\n")
				b.WriteString(t)
				b.WriteString("\n\n")
			}
			return
		}
	}
	if n.Type == html.TextNode {
		if t := strings.TrimSpace(n.Data); t != "" {
			b.WriteString(strings.Join(strings.Fields(t), " "))
			b.WriteByte(' ')
		}
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		writeBlocks(b, c)
	}
}

func findBody(n *html.Node) *html.Node {
	if n.Type == html.ElementNode && n.Data == "body" {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if b := findBody(c); b != nil {
			return b
		}
	}
	return nil
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
		return n.FirstChild.Data
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}
