package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Format is a kind of file this package reads.
type Format string

// The formats Extract reads.
const (
	FormatMarkdown Format = "markdown"
	FormatText     Format = "text"
	FormatJSONL    Format = "jsonl"
	FormatHTML     Format = "html"
	FormatPDF      Format = "pdf"
	FormatDOCX     Format = "docx"
	FormatCSV      Format = "csv"
	FormatXLSX     Format = "xlsx"
)

// Formats lists every format, in the order extensions are documented.
var Formats = []Format{FormatMarkdown, FormatText, FormatJSONL, FormatHTML, FormatPDF, FormatDOCX, FormatCSV, FormatXLSX}

// extensions maps a lower-case file extension to its format.
var extensions = map[string]Format{
	".md": FormatMarkdown, ".markdown": FormatMarkdown,
	".txt":   FormatText,
	".jsonl": FormatJSONL, ".ndjson": FormatJSONL,
	".html": FormatHTML, ".htm": FormatHTML, ".xhtml": FormatHTML,
	".pdf":  FormatPDF,
	".docx": FormatDOCX,
	".csv":  FormatCSV,
	".xlsx": FormatXLSX,
}

// supportedList is the extensions, for messages.
const supportedList = ".md, .markdown, .txt, .jsonl, .ndjson, .html, .htm, .xhtml, .pdf, .docx, .csv, .xlsx"

// Sentinel errors of per-file problems; a Problem (and a *FileError)
// wraps the one that says what kind of problem it is.
var (
	// ErrUnsupported: neither the name nor the content is a format this
	// package reads.
	ErrUnsupported = errors.New("ingest: unsupported file type")
	// ErrTooLarge: the file, or what it decompresses to, is over a Limits
	// bound.
	ErrTooLarge = errors.New("ingest: file too large")
	// ErrCorrupt: the file is not a readable file of its format.
	ErrCorrupt = errors.New("ingest: corrupt file")
	// ErrInvalidUTF8: a text file (Markdown, text, CSV, JSONL) that is not
	// UTF-8. Such files are refused, not repaired: a guess at their
	// encoding would index mojibake.
	ErrInvalidUTF8 = errors.New("ingest: not valid UTF-8")
	// ErrEmpty: the file holds no text to index (a scanned PDF without a
	// text layer, an empty sheet).
	ErrEmpty = errors.New("ingest: no text")
	// ErrMismatch: the content is of another format than the name says
	// and is not one this package reads either.
	ErrMismatch = errors.New("ingest: content does not match the file name")
)

// Problem codes, one per sentinel, for callers that answer in JSON.
const (
	CodeUnsupported = "unsupported"
	CodeTooLarge    = "too_large"
	CodeCorrupt     = "corrupt"
	CodeInvalidUTF8 = "invalid_utf8"
	CodeEmpty       = "empty"
	CodeMismatch    = "mismatch"
	CodeInvalid     = "invalid" // a JSONL line that is not a valid record
	CodeIO          = "io"      // the file could not be read
)

var codes = map[error]string{
	ErrUnsupported: CodeUnsupported, ErrTooLarge: CodeTooLarge, ErrCorrupt: CodeCorrupt,
	ErrInvalidUTF8: CodeInvalidUTF8, ErrEmpty: CodeEmpty, ErrMismatch: CodeMismatch,
}

var sentinels = map[string]error{
	CodeUnsupported: ErrUnsupported, CodeTooLarge: ErrTooLarge, CodeCorrupt: ErrCorrupt,
	CodeInvalidUTF8: ErrInvalidUTF8, CodeEmpty: ErrEmpty, CodeMismatch: ErrMismatch,
}

// FileError is one file that could not be read: which, as what format,
// and why. It wraps one of the sentinel errors above (Is) and, when there
// is one, the parser's error.
type FileError struct {
	File   string
	Format Format
	Reason string
	Kind   error // one of the sentinels
	Err    error // the underlying cause, if any
}

func (e *FileError) Error() string {
	if e.Format != "" {
		return fmt.Sprintf("ingest: %s (%s): %s", e.File, e.Format, e.Reason)
	}
	return fmt.Sprintf("ingest: %s: %s", e.File, e.Reason)
}

// Unwrap returns the kind and the cause.
func (e *FileError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Code is the problem code of the error's kind.
func (e *FileError) Code() string { return codes[e.Kind] }

func fileErr(file string, f Format, kind error, format string, args ...any) *FileError {
	return &FileError{File: file, Format: f, Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// Limits bound what reading one file may cost. The zero value means the
// defaults.
type Limits struct {
	// MaxFileBytes bounds a file's size; default 64 MiB.
	MaxFileBytes int64
	// MaxUnzippedBytes bounds what a DOCX or XLSX (zip archives) may
	// decompress to, all entries together; default 256 MiB.
	MaxUnzippedBytes int64
	// MaxZipEntries bounds the entries of a DOCX or XLSX; default 10,000.
	MaxZipEntries int
	// MaxPages bounds the pages read from a PDF; default 5,000.
	MaxPages int
	// MaxCells bounds the cells read from a CSV or XLSX, all sheets
	// together; default 5,000,000.
	MaxCells int
}

func (l *Limits) setDefaults() {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 64 << 20
	}
	if l.MaxUnzippedBytes <= 0 {
		l.MaxUnzippedBytes = 256 << 20
	}
	if l.MaxZipEntries <= 0 {
		l.MaxZipEntries = 10_000
	}
	if l.MaxPages <= 0 {
		l.MaxPages = 5_000
	}
	if l.MaxCells <= 0 {
		l.MaxCells = 5_000_000
	}
}

// FormatOf is the format a file name's extension names, or "".
func FormatOf(name string) Format {
	return extensions[strings.ToLower(filepath.Ext(name))]
}

// Detect decides a file's format from its name and its content (data, or
// at least its first 512 bytes). The content wins where it is certain —
// a PDF header, a zip holding word/ or xl/ parts, HTML markup — so a file
// with a wrong or missing extension is still read right; a binary file
// named as text is refused (ErrMismatch) rather than indexed as garbage.
// Text content with a text extension keeps the extension's format.
func Detect(name string, data []byte) (Format, error) {
	byName := FormatOf(name)
	if bytes.HasPrefix(data, oleMagic) {
		return "", fileErr(name, byName, ErrUnsupported, "a legacy Office file (.doc, .xls, .ppt) or a password-protected one; save it as .docx or .xlsx without a password")
	}
	byContent := sniff(data)
	switch {
	case byContent == "" && byName == "":
		return "", fileErr(name, "", ErrUnsupported, "unsupported file type %s (want %s)", describe(data), supportedList)
	case byContent == "":
		return byName, nil
	case byContent == sniffText:
		switch byName {
		case "":
			return FormatText, nil
		case FormatPDF, FormatDOCX, FormatXLSX:
			return "", fileErr(name, byName, ErrMismatch, "named .%s but the content is text, not %s", strings.ToLower(strings.TrimPrefix(filepath.Ext(name), ".")), byName)
		}
		return byName, nil
	case byContent == sniffBinary:
		if byName == "" {
			return "", fileErr(name, "", ErrUnsupported, "unsupported file type %s (want %s)", describe(data), supportedList)
		}
		return "", fileErr(name, byName, ErrMismatch, "named as %s but the content is binary (%s)", byName, describe(data))
	case byContent == sniffZip:
		if byName == FormatDOCX || byName == FormatXLSX {
			return byName, nil // the archive reader says whether it is one
		}
		return "", fileErr(name, byName, ErrUnsupported, "a zip archive that is neither a DOCX nor an XLSX")
	}
	f := Format(byContent)
	if f == FormatHTML && (byName == FormatMarkdown || byName == FormatText) {
		return byName, nil // Markdown and text may well start with a tag
	}
	return f, nil
}

// oleMagic starts an OLE compound file: Office 97–2003 documents, and
// Office 2007+ files encrypted with a password.
var oleMagic = []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}

// Results of sniff besides a Format.
const (
	sniffText   = "(text)"
	sniffBinary = "(binary)"
	sniffZip    = "(zip)"
)

// sniff says what the content is: a Format when certain, sniffZip for a
// zip archive that is not recognisably DOCX or XLSX, sniffText,
// sniffBinary, or "" for no content.
func sniff(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	head := data[:min(len(data), 1024)]
	switch {
	case bytes.HasPrefix(bytes.TrimLeft(head, "\x00\t\r\n "), []byte("%PDF-")):
		return string(FormatPDF)
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return sniffZipKind(data)
	}
	ct := http.DetectContentType(head)
	switch {
	case strings.HasPrefix(ct, "text/html"):
		return string(FormatHTML)
	case ct == "application/pdf":
		return string(FormatPDF)
	case strings.HasPrefix(ct, "text/"), strings.HasPrefix(ct, "application/json"):
		return sniffText
	}
	if looksText(head) {
		return sniffText
	}
	return sniffBinary
}

// looksText: no NUL byte and valid UTF-8 but for a rune cut at the end.
func looksText(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	return utf8.Valid(head)
}

// sniffZipKind looks at the local file names in the archive's first
// headers: an Office file stores [Content_Types].xml and its word/ or xl/
// parts near the start.
func sniffZipKind(data []byte) string {
	head := data[:min(len(data), 64<<10)]
	switch {
	case bytes.Contains(head, []byte("word/")):
		return string(FormatDOCX)
	case bytes.Contains(head, []byte("xl/")):
		return string(FormatXLSX)
	}
	return sniffZip
}

// describe names content for a message: its MIME type as sniffed.
func describe(data []byte) string {
	if len(data) == 0 {
		return "(empty)"
	}
	return "(" + http.DetectContentType(data[:min(len(data), 512)]) + ")"
}

// guard runs a third-party parser, turning a panic into ErrCorrupt: a
// malformed file must not take the process down.
func guard(file string, f Format, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &FileError{File: file, Format: f, Kind: ErrCorrupt, Reason: fmt.Sprintf("the %s reader failed on this file: %v", f, r)}
		}
	}()
	return fn()
}

// checkUTF8 refuses text that is not UTF-8, naming the first bad byte's
// offset and line. A UTF-8 byte order mark is allowed (and dropped by
// the readers); UTF-16 is refused with a hint.
func checkUTF8(file string, f Format, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return fileErr(file, f, ErrInvalidUTF8, "UTF-16 text; save it as UTF-8")
	}
	off := 0
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fileErr(file, f, ErrInvalidUTF8, "invalid UTF-8 at byte %d (line %d); the file is refused, convert it to UTF-8", off, line)
}
