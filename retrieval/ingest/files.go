package ingest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fileEntry is one file to read.
type fileEntry struct {
	path    string // as found: the given path, or joined under a given directory
	abs     string // the journal key
	rel     string // relative to the given directory (slashes): the document id
	display string
	size    int64
	mtime   int64
	meta    map[string]any // added to every chunk (Files' File.Metadata)
}

// list expands paths into the files to read, in order; a path that
// cannot be read is a problem. A file named explicitly is listed whatever
// its extension (its content decides); in directories only files with a
// known extension are.
func list(paths []string) ([]fileEntry, []Problem) {
	var files []fileEntry
	var problems []Problem
	seen := map[string]bool{}
	add := func(path, root string, info fs.FileInfo) {
		abs, err := filepath.Abs(path)
		if err != nil {
			problems = append(problems, Problem{File: displayPath(path), Reason: err.Error(), Code: CodeIO})
			return
		}
		if seen[abs] {
			return
		}
		seen[abs] = true
		rel, err := filepath.Rel(root, path)
		if err != nil {
			rel = filepath.Base(path)
		}
		files = append(files, fileEntry{path: path, abs: abs, rel: filepath.ToSlash(rel), display: displayPath(path),
			size: info.Size(), mtime: info.ModTime().UnixNano()})
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			problems = append(problems, Problem{File: displayPath(p), Reason: unwrapPath(err), Code: CodeIO})
			continue
		}
		if !info.IsDir() {
			add(p, filepath.Dir(p), info)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				problems = append(problems, Problem{File: displayPath(path), Reason: unwrapPath(err), Code: CodeIO})
				return nil
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || FormatOf(path) == "" || !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				problems = append(problems, Problem{File: displayPath(path), Reason: unwrapPath(err), Code: CodeIO})
				return nil
			}
			add(path, p, info)
			return nil
		})
		if err != nil {
			problems = append(problems, Problem{File: displayPath(p), Reason: err.Error(), Code: CodeIO})
		}
	}
	return files, problems
}

// unwrapPath drops the path a *fs.PathError repeats.
func unwrapPath(err error) string {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
