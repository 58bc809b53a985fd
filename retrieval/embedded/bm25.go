package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Bleve field names. Nothing is stored in bleve: hits are built from the
// tenant's records.
const (
	fieldContent = "content" // title and text, English analyzer
	fieldDate    = "date"    // the chunk's date, when it has one
	fieldMeta    = "meta"    // meta.<key>: metadata values, keyword analyzer
)

func textMapping() mapping.IndexMapping {
	content := bleve.NewTextFieldMapping()
	content.Analyzer = en.AnalyzerName
	content.Store = false
	content.IncludeInAll = false
	content.IncludeTermVectors = false
	content.DocValues = false

	date := bleve.NewDateTimeFieldMapping()
	date.Store = false
	date.IncludeInAll = false

	meta := bleve.NewDocumentMapping()
	meta.DefaultAnalyzer = keyword.Name

	doc := bleve.NewDocumentMapping()
	doc.AddFieldMappingsAt(fieldContent, content)
	doc.AddFieldMappingsAt(fieldDate, date)
	doc.AddSubDocumentMapping(fieldMeta, meta)

	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultMapping = doc
	im.DefaultAnalyzer = en.AnalyzerName
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	return im
}

func openBleve(path string) (bleve.Index, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ix, err := bleve.New(path, textMapping())
		if err != nil {
			return nil, fmt.Errorf("create bm25 index: %w", err)
		}
		return ix, nil
	}
	ix, err := bleve.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open bm25 index: %w", err)
	}
	return ix, nil
}

// bleveDoc is what bleve indexes for a record.
func bleveDoc(r record) map[string]any {
	doc := map[string]any{fieldContent: embedText(r.Title, r.Text)}
	if !r.Date.IsZero() {
		doc[fieldDate] = r.Date.UTC()
	}
	if len(r.meta) > 0 {
		meta := make(map[string]any, len(r.meta))
		for k, v := range r.meta {
			meta[k] = retrieval.MetadataString(v)
		}
		doc[fieldMeta] = meta
	}
	return doc
}

// textQuery matches any of the query's words in title and text, within
// the filters, so that bleve applies the filters before it takes K.
// Qualified identifiers are matched whole and by their parts (see
// identifierParts).
func textQuery(q retrieval.Query) query.Query {
	match := bleve.NewMatchQuery(identifierParts(q.Text))
	match.SetField(fieldContent)
	if q.Filters.IsZero() {
		return match
	}
	parts := []query.Query{match}
	if f := q.Filters; !f.From.IsZero() || !f.To.IsZero() {
		yes := true
		dr := bleve.NewDateRangeInclusiveQuery(f.From, f.To, &yes, &yes)
		dr.SetField(fieldDate)
		parts = append(parts, dr)
	}
	for k, v := range q.Filters.Metadata {
		tq := bleve.NewTermQuery(v)
		tq.SetField(fieldMeta + "." + k)
		parts = append(parts, tq)
	}
	return bleve.NewConjunctionQuery(parts...)
}

// identifierParts adds the parts of each qualified identifier in text
// after it: "sync.RWMutex" becomes "sync.RWMutex sync RWMutex". The
// analyzer's word segmentation (Unicode UAX #29) keeps "sync.RWMutex" as
// one term, which only a text quoting it whole contains, so the package
// documenting RWMutex under a "type RWMutex" heading would not match at
// all; with its parts, it matches as package + symbol, and a text that
// quotes the identifier whole matches it more.
func identifierParts(text string) string {
	var extra []string
	for f := range strings.FieldsSeq(text) {
		f = strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
		if !strings.Contains(f, ".") {
			continue
		}
		parts := strings.Split(f, ".")
		ok := len(parts) > 1
		for _, p := range parts {
			ok = ok && p != "" && strings.IndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) < 0
		}
		if ok {
			extra = append(extra, parts...)
		}
	}
	if len(extra) == 0 {
		return text
	}
	return text + " " + strings.Join(extra, " ")
}

func (t *tenant) searchBM25(q retrieval.Query) ([]retrieval.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return nil, ErrClosed
	}
	req := bleve.NewSearchRequestOptions(textQuery(q), q.Limit(), 0, false)
	req.SortBy([]string{"-_score", "_id"})
	res, err := t.text.Search(req)
	if err != nil {
		return nil, fmt.Errorf("embedded: bm25 search: %w", err)
	}
	hits := make([]retrieval.Hit, 0, len(res.Hits))
	for _, m := range res.Hits {
		r, ok := t.recs[m.ID]
		// The records are the truth; Match guards dates bleve cannot hold.
		if !ok || !q.Filters.Match(r.Date, r.meta) {
			continue
		}
		hits = append(hits, r.hit(m.Score))
	}
	return hits, nil
}
