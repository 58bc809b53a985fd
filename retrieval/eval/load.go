package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by every *LineError.
var ErrFormat = errors.New("eval: bad input")

// LineError says which line of which file is wrong and why.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("eval: %s:%d: %s", e.File, e.Line, e.Reason)
}

// Unwrap lets errors.Is(err, ErrFormat) hold.
func (e *LineError) Unwrap() error { return ErrFormat }

// Query is one labelled query.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Qrels maps a query id to its judgements.
type Qrels map[string]Judgements

// LoadQueries reads a BEIR queries.jsonl file.
func LoadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return ReadQueries(f, path)
}

// ReadQueries reads BEIR queries ({"_id", "text"} per line; other fields
// are ignored, blank lines skipped), naming them name in errors.
func ReadQueries(r io.Reader, name string) ([]Query, error) {
	var out []Query
	seen := map[string]int{}
	err := eachLine(r, name, func(n int, line string) error {
		var q Query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			return &LineError{File: name, Line: n, Reason: "not a JSON object: " + err.Error()}
		}
		switch {
		case q.ID == "":
			return &LineError{File: name, Line: n, Reason: `"_id" is missing or empty`}
		case strings.TrimSpace(q.Text) == "":
			return &LineError{File: name, Line: n, Reason: `"text" is missing or empty`}
		case seen[q.ID] > 0:
			return &LineError{File: name, Line: n, Reason: fmt.Sprintf("query %q already defined at line %d", q.ID, seen[q.ID])}
		}
		seen[q.ID] = n
		out = append(out, q)
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%w: %s: no queries", ErrFormat, name)
	}
	return out, err
}

// LoadQrels reads a qrels file.
func LoadQrels(path string) (Qrels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return ReadQrels(f, path)
}

// ReadQrels reads BEIR qrels: "query-id\tcorpus-id\tscore" lines after an
// optional header; TREC's four columns ("query-id 0 corpus-id score",
// blank-separated) are accepted too. Scores are integers ≥ 0.
func ReadQrels(r io.Reader, name string) (Qrels, error) {
	out := Qrels{}
	first := true
	err := eachLine(r, name, func(n int, line string) error {
		f := strings.Split(line, "\t")
		if len(f) == 1 {
			f = strings.Fields(line)
		}
		if len(f) == 4 {
			f = []string{f[0], f[2], f[3]}
		}
		if len(f) != 3 {
			return &LineError{File: name, Line: n, Reason: fmt.Sprintf("%d fields, want query-id, corpus-id and score separated by tabs", len(f))}
		}
		if first && strings.EqualFold(strings.TrimSpace(f[2]), "score") {
			first = false
			return nil // the header
		}
		first = false
		score, err := strconv.Atoi(strings.TrimSpace(f[2]))
		q, d := strings.TrimSpace(f[0]), strings.TrimSpace(f[1])
		switch {
		case err != nil || score < 0:
			return &LineError{File: name, Line: n, Reason: fmt.Sprintf("score %q: want an integer ≥ 0", f[2])}
		case q == "" || d == "":
			return &LineError{File: name, Line: n, Reason: "empty query-id or corpus-id"}
		}
		if _, dup := out[q][d]; dup {
			return &LineError{File: name, Line: n, Reason: fmt.Sprintf("%s %s judged twice", q, d)}
		}
		if out[q] == nil {
			out[q] = Judgements{}
		}
		out[q][d] = score
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%w: %s: no judgements", ErrFormat, name)
	}
	return out, err
}

func eachLine(r io.Reader, name string, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{File: name, Line: n + 1, Reason: err.Error()}
	}
	return nil
}
