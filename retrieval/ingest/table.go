package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// A table's first non-empty row is its header; every chunk of the table
// starts with it (see Chunks), and carries the table's rows as
// row_start..row_end, numbered as a spreadsheet numbers them.

// tableBuilder collects a table's rows, counting cells against the limit.
type tableBuilder struct {
	name  string
	f     Format
	lim   Limits
	cells *int
	t     *Table
}

// add takes one row; it reports ErrTooLarge past MaxCells.
func (b *tableBuilder) add(n int, cells []string) error {
	for i := range cells {
		cells[i] = strings.Join(strings.Fields(strings.ToValidUTF8(cells[i], "\uFFFD")), " ")
	}
	end := len(cells)
	for end > 0 && cells[end-1] == "" {
		end--
	}
	if end == 0 {
		return nil
	}
	cells = cells[:end]
	*b.cells += len(cells)
	if *b.cells > b.lim.MaxCells {
		return fileErr(b.name, b.f, ErrTooLarge, "more than %d cells", b.lim.MaxCells)
	}
	if b.t.Header == nil {
		b.t.Header = cells
		return nil
	}
	for len(b.t.Header) < len(cells) {
		b.t.Header = append(b.t.Header, "column "+strconv.Itoa(len(b.t.Header)+1))
	}
	b.t.Rows = append(b.t.Rows, Row{N: n, Cells: cells})
	return nil
}

// extractCSV reads comma-, semicolon- or tab-separated values (the
// separator most frequent in the first line, outside quotes), quotes as
// RFC 4180 with lazy quotes allowed.
func extractCSV(name string, data []byte, lim Limits) (Extracted, error) {
	if err := checkUTF8(name, FormatCSV, data); err != nil {
		return Extracted{}, err
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = separator(data)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false
	cells := 0
	t := &Table{}
	b := &tableBuilder{name: name, f: FormatCSV, lim: lim, cells: &cells, t: t}
	for n := 1; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Extracted{}, &FileError{File: name, Format: FormatCSV, Kind: ErrCorrupt, Reason: err.Error(), Err: err}
		}
		if line, _ := r.FieldPos(0); line > 0 {
			n = line
		}
		if err := b.add(n, rec); err != nil {
			return Extracted{}, err
		}
	}
	return Extracted{Sections: []Section{{Table: t}}}, nil
}

func separator(data []byte) rune {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	best, bestN := ',', 0
	for _, c := range []rune{',', ';', '\t'} {
		n, quoted := 0, false
		for _, r := range string(first) {
			switch {
			case r == '"':
				quoted = !quoted
			case r == c && !quoted:
				n++
			}
		}
		if n > bestN {
			best, bestN = c, n
		}
	}
	return best
}

// extractXLSX reads every visible sheet with excelize: each sheet is a
// section with metadata "sheet", rows by their spreadsheet number; cell
// values as formatted (a date shows as the sheet shows it).
func extractXLSX(name string, data []byte, lim Limits) (Extracted, error) {
	if _, err := openZip(name, FormatXLSX, data, lim); err != nil {
		return Extracted{}, err
	}
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    lim.MaxUnzippedBytes,
		UnzipXMLSizeLimit: min(lim.MaxUnzippedBytes, 16<<20),
	})
	if err != nil {
		return Extracted{}, &FileError{File: name, Format: FormatXLSX, Kind: ErrCorrupt, Reason: "not a readable XLSX: " + err.Error(), Err: err}
	}
	defer f.Close()
	var ex Extracted
	cells := 0
	for _, sheet := range f.GetSheetList() {
		if visible, err := f.GetSheetVisible(sheet); err == nil && !visible {
			continue
		}
		t := &Table{Name: sheet}
		b := &tableBuilder{name: name, f: FormatXLSX, lim: lim, cells: &cells, t: t}
		rows, err := f.Rows(sheet)
		if err != nil {
			return Extracted{}, &FileError{File: name, Format: FormatXLSX, Kind: ErrCorrupt, Reason: fmt.Sprintf("sheet %q: %v", sheet, err), Err: err}
		}
		n := 0
		for rows.Next() {
			n++
			cols, err := rows.Columns()
			if err != nil {
				_ = rows.Close()
				return Extracted{}, &FileError{File: name, Format: FormatXLSX, Kind: ErrCorrupt, Reason: fmt.Sprintf("sheet %q row %d: %v", sheet, n, err), Err: err}
			}
			if err := b.add(n, cols); err != nil {
				_ = rows.Close()
				return Extracted{}, err
			}
		}
		_ = rows.Close()
		if len(t.Rows) > 0 {
			ex.Sections = append(ex.Sections, Section{Table: t, Metadata: map[string]any{"sheet": sheet}})
		}
	}
	return ex, nil
}
