package ingesttest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// Para is one DOCX paragraph; Style is a paragraph style id such as
// "Title" or "Heading1", or "" for body text.
type Para struct {
	Style string
	Text  string
}

// fixed is the modification time of every archive entry, so the same
// input makes the same bytes.
var fixed = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// DOCX returns a minimal Word document: [Content_Types].xml, the
// package relationships, docProps/core.xml with title (when not empty),
// and word/document.xml with paras.
func DOCX(title string, paras ...Para) []byte {
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		if p.Style != "" {
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="%s"/></w:pPr>`, esc(p.Style))
		}
		fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, esc(p.Text))
	}
	files := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`},
		{"docProps/core.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + esc(title) + `</dc:title></cp:coreProperties>`},
	}
	return zipOf(files)
}

func zipOf(files [][2]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f[0], Method: zip.Deflate, Modified: fixed})
		if err != nil {
			panic(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Sheet is one XLSX sheet: its name and rows, the first row the header.
type Sheet struct {
	Name string
	Rows [][]any
}

// XLSX returns a workbook with the sheets, written by excelize.
func XLSX(sheets ...Sheet) []byte {
	f := excelize.NewFile()
	defer f.Close()
	for i, s := range sheets {
		if i == 0 {
			if err := f.SetSheetName("Sheet1", s.Name); err != nil {
				panic(err)
			}
		} else if _, err := f.NewSheet(s.Name); err != nil {
			panic(err)
		}
		for r, row := range s.Rows {
			cell, _ := excelize.CoordinatesToCellName(1, r+1)
			if err := f.SetSheetRow(s.Name, cell, &row); err != nil {
				panic(err)
			}
		}
	}
	f.SetDocProps(&excelize.DocProperties{Created: fixed.Format(time.RFC3339), Modified: fixed.Format(time.RFC3339)})
	buf, err := f.WriteToBuffer()
	if err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// ZipBomb returns a DOCX-looking archive whose word/document.xml
// declares and inflates to size bytes of zeros (a few KB compressed for
// hundreds of MB).
func ZipBomb(size int64) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml"} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: fixed})
		if err != nil {
			panic(err)
		}
		if name == "[Content_Types].xml" {
			_, _ = w.Write([]byte(`<Types/>`))
			continue
		}
		zeros := make([]byte, 1<<20)
		for n := size; n > 0; n -= int64(len(zeros)) {
			if _, err := w.Write(zeros[:min(n, int64(len(zeros)))]); err != nil {
				panic(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// ManyEntries returns a DOCX-looking archive with n tiny entries.
func ManyEntries(n int) []byte {
	files := make([][2]string, 0, n+1)
	files = append(files, [2]string{"word/document.xml", "<w:document/>"})
	for i := range n {
		files = append(files, [2]string{fmt.Sprintf("word/media/%d.xml", i), "x"})
	}
	return zipOf(files)
}

// HTML returns a page with navigation, a sidebar and a footer around an
// <article> with the title as h1 and each of sections as an h2 and
// paragraphs, so main-content extraction has something to throw away.
func HTML(title string, sections ...[2]string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title><style>body{font:14px sans-serif}</style><script>var tracking = 1;</script></head><body>\n", esc(title))
	b.WriteString(`<nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li><li><a href="/contact">Contact</a></li></ul></nav>` + "\n")
	fmt.Fprintf(&b, "<main><article><h1>%s</h1>\n", esc(title))
	for _, s := range sections {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", esc(s[0]))
		for _, p := range strings.Split(s[1], "\n\n") {
			fmt.Fprintf(&b, "<p>%s</p>\n", esc(p))
		}
	}
	b.WriteString("</article></main>\n")
	b.WriteString(`<aside class="sidebar"><h3>Advertisement</h3><p>Buy our sponsored widgets today.</p></aside>` + "\n")
	b.WriteString(`<footer class="footer"><p>Copyright footer text. All rights reserved.</p></footer></body></html>` + "\n")
	return []byte(b.String())
}

// ZipDeclaring returns a DOCX-looking archive whose word/document.xml
// holds actual bytes of zeros, deflated, but whose headers declare
// declared bytes: a header claiming gigabytes costs nothing to make, and
// one claiming less than it inflates to is the other kind of lie.
func ZipDeclaring(declared uint64, actual int) []byte {
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	_, _ = fw.Write(make([]byte, actual))
	_ = fw.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, Modified: fixed,
		CRC32: crc32.ChecksumIEEE(make([]byte, actual)), CompressedSize64: uint64(comp.Len()), UncompressedSize64: declared})
	if err != nil {
		panic(err)
	}
	_, _ = w.Write(comp.Bytes())
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
