package ingest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
)

// openZip opens a DOCX or XLSX archive within the limits: at most
// MaxZipEntries entries whose declared sizes add up to at most
// MaxUnzippedBytes. archive/zip refuses to inflate an entry past its
// declared size (ErrFormat), so the declared sizes bound what reading
// can cost: a zip bomb is refused before anything is inflated.
func openZip(name string, f Format, data []byte, lim Limits) (*zip.Reader, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &FileError{File: name, Format: f, Kind: ErrCorrupt, Reason: "not a readable zip archive: " + err.Error(), Err: err}
	}
	if len(zr.File) > lim.MaxZipEntries {
		return nil, fileErr(name, f, ErrTooLarge, "%d archive entries, over the limit of %d", len(zr.File), lim.MaxZipEntries)
	}
	var total uint64
	for _, e := range zr.File {
		total += e.UncompressedSize64
		if total > uint64(lim.MaxUnzippedBytes) {
			return nil, fileErr(name, f, ErrTooLarge, "decompresses to more than %d bytes (a zip bomb?)", lim.MaxUnzippedBytes)
		}
	}
	return zr, nil
}

// readEntry reads one archive entry whole, or reports it missing.
func readEntry(name string, f Format, zr *zip.Reader, entry string, lim Limits) ([]byte, error) {
	e, err := zr.Open(entry)
	if err != nil {
		return nil, fileErr(name, f, ErrCorrupt, "no %s in the archive: not a %s", entry, f)
	}
	defer e.Close()
	b, err := io.ReadAll(io.LimitReader(e, lim.MaxUnzippedBytes+1))
	if err != nil {
		return nil, &FileError{File: name, Format: f, Kind: ErrCorrupt, Reason: fmt.Sprintf("reading %s: %v", entry, err), Err: err}
	}
	if int64(len(b)) > lim.MaxUnzippedBytes {
		return nil, fileErr(name, f, ErrTooLarge, "%s decompresses to more than %d bytes", entry, lim.MaxUnzippedBytes)
	}
	return b, nil
}
