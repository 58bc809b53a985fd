package ingest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// extractDOCX reads word/document.xml: paragraphs become paragraphs, and
// a paragraph in a "Title" or "Heading N" style (by style id, or by the
// name styles.xml gives it) becomes a Markdown heading so the chunker
// cuts sections there; table rows become "a | b | c" lines. The title is
// the core properties' dc:title, else the first Title-styled paragraph.
func extractDOCX(name string, data []byte, lim Limits) (Extracted, error) {
	zr, err := openZip(name, FormatDOCX, data, lim)
	if err != nil {
		return Extracted{}, err
	}
	body, err := readEntry(name, FormatDOCX, zr, "word/document.xml", lim)
	if err != nil {
		return Extracted{}, err
	}
	levels := map[string]int{} // style id → heading level; 0 for Title
	if styles, err := readEntry(name, FormatDOCX, zr, "word/styles.xml", lim); err == nil {
		levels = styleLevels(styles)
	}
	title := ""
	if core, err := readEntry(name, FormatDOCX, zr, "docProps/core.xml", lim); err == nil {
		title = coreTitle(core)
	}
	text, first, err := docxText(body, levels)
	if err != nil {
		return Extracted{}, &FileError{File: name, Format: FormatDOCX, Kind: ErrCorrupt, Reason: "word/document.xml: " + err.Error(), Err: err}
	}
	if title == "" {
		title = first
	}
	return Extracted{Title: title, Sections: []Section{{Text: text}}}, nil
}

// headingLevel reads "Heading3", "heading 3", "Title".
func headingLevel(s string) (int, bool) {
	s = strings.ToLower(strings.ReplaceAll(s, " ", ""))
	if s == "title" {
		return 0, true
	}
	if n, ok := strings.CutPrefix(s, "heading"); ok {
		if l, err := strconv.Atoi(n); err == nil && l >= 1 && l <= 6 {
			return l, true
		}
	}
	return 0, false
}

// styleLevels maps the style ids of heading styles to their level, by
// the styles' names (localised Word files keep English names there).
func styleLevels(data []byte) map[string]int {
	var s struct {
		Styles []struct {
			ID   string `xml:"styleId,attr"`
			Name struct {
				Val string `xml:"val,attr"`
			} `xml:"name"`
		} `xml:"style"`
	}
	out := map[string]int{}
	if xml.Unmarshal(data, &s) != nil {
		return out
	}
	for _, st := range s.Styles {
		if l, ok := headingLevel(st.Name.Val); ok {
			out[st.ID] = l
		}
	}
	return out
}

func coreTitle(data []byte) string {
	var c struct {
		Title string `xml:"title"`
	}
	if xml.Unmarshal(data, &c) != nil {
		return ""
	}
	return strings.TrimSpace(c.Title)
}

// docxText walks the document's XML tokens: w:t text, w:tab and w:br,
// paragraph ends, heading styles, table cells. It returns the text and
// the first Title-styled paragraph.
func docxText(data []byte, levels map[string]int) (string, string, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	var out, para strings.Builder
	var title string
	level := -1 // the paragraph's heading level; -1: not a heading
	inText := false
	var cells []string // the row being read
	inRow := 0
	endPara := func() {
		t := strings.TrimSpace(para.String())
		para.Reset()
		lv := level
		level = -1
		if t == "" {
			return
		}
		if inRow > 0 {
			cells[len(cells)-1] = strings.TrimSpace(cells[len(cells)-1] + " " + t)
			return
		}
		switch {
		case lv == 0:
			if title == "" {
				title = t
				return
			}
			out.WriteString("\n\n# " + t + "\n\n")
		case lv > 0:
			out.WriteString("\n\n" + strings.Repeat("#", lv) + " " + t + "\n\n")
		default:
			out.WriteString(t + "\n\n")
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						if l, ok := levels[a.Value]; ok {
							level = l
						} else if l, ok := headingLevel(a.Value); ok {
							level = l
						}
					}
				}
			case "tr":
				inRow++
				cells = cells[:0]
			case "tc":
				if inRow > 0 {
					cells = append(cells, "")
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				endPara()
			case "tr":
				if inRow > 0 {
					inRow--
					if line := strings.Join(cells, " | "); strings.Trim(line, " |") != "" {
						out.WriteString(line + "\n")
					}
				}
			case "tbl":
				out.WriteString("\n")
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	return out.String(), title, nil
}
