package vespatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/llm"
)

type scored struct {
	id    string
	doc   map[string]any
	score float64
}

func queryError(w http.ResponseWriter, status int, errs ...QueryError) {
	writeJSON(w, status, map[string]any{"root": map[string]any{
		"id": "toplevel", "relevance": 1.0, "fields": map[string]any{"totalCount": 0}, "errors": errs,
	}})
}

func badRequest(w http.ResponseWriter, msg string) {
	queryError(w, http.StatusBadRequest, QueryError{Code: 4, Summary: "Invalid query parameter", Message: msg})
}

// search serves POST /search/ with a JSON body.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		badRequest(w, "Could not parse the JSON request body: "+err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, req)
	f, faulty := next(&s.queryF)
	if faulty && f.PartialPercent == 0 {
		if len(f.Errors) > 0 {
			queryError(w, cmp.Or(f.Status, http.StatusOK), f.Errors...)
			return
		}
		w.WriteHeader(cmp.Or(f.Status, http.StatusInternalServerError))
		fmt.Fprint(w, f.Message)
		return
	}
	yql, _ := req["yql"].(string)
	p, err := parseYQL(yql)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if !s.known(p.doctype) {
		badRequest(w, fmt.Sprintf("Could not resolve source ref '%s'.", p.doctype))
		return
	}
	hits := 10
	if h, ok := req["hits"].(float64); ok {
		hits = int(h)
	}
	ranking, _ := req["ranking.profile"].(string)
	docs := s.sortedDocs(p.doctype)
	percent := 100
	if faulty {
		percent = f.PartialPercent
		docs = docs[:len(docs)*percent/100]
	}
	var matched []scored
	switch {
	case p.userQuery:
		if ranking != "bm25" {
			badRequest(w, fmt.Sprintf("userQuery() ranked by %q: want the bm25 rank profile", ranking))
			return
		}
		q, _ := req["query"].(string)
		matched = bm25(filter(docs, p), llm.Tokenize(q))
	case p.nn:
		if ranking != "semantic" {
			badRequest(w, fmt.Sprintf("nearestNeighbor ranked by %q: want the semantic rank profile", ranking))
			return
		}
		q, err := queryTensor(req["input.query(q)"])
		if err != nil {
			badRequest(w, err.Error())
			return
		}
		matched = nearest(filter(docs, p), q, p.targetHits)
	default:
		matched = filter(docs, p)
	}
	slices.SortStableFunc(matched, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	root := map[string]any{
		"id": "toplevel", "relevance": 1.0,
		"fields":   map[string]any{"totalCount": len(matched)},
		"coverage": coverage(len(docs), percent),
	}
	var children []map[string]any
	for _, m := range matched[:min(hits, len(matched))] {
		children = append(children, s.render(p.doctype, m))
	}
	if len(children) > 0 {
		root["children"] = children
	}
	writeJSON(w, http.StatusOK, map[string]any{"root": root})
}

func coverage(docs, percent int) map[string]any {
	c := map[string]any{"coverage": percent, "documents": docs, "full": percent == 100,
		"nodes": 1, "results": 1, "resultsFull": 1}
	if percent < 100 {
		c["resultsFull"] = 0
		c["degraded"] = map[string]bool{"match-phase": false, "timeout": true, "adaptive-timeout": false, "non-ideal-state": false}
	}
	return c
}

func (s *Server) render(doctype string, m scored) map[string]any {
	docID := fmt.Sprintf("id:agentbus:%s::%s", doctype, m.id)
	fields := map[string]any{"sddocname": doctype, "documentid": docID}
	for k, v := range m.doc {
		if k != "embedding" {
			fields[k] = v
		}
	}
	return map[string]any{"id": docID, "relevance": m.score, "source": "content", "fields": fields}
}

// sortedDocs is a document type's documents in id order.
func (s *Server) sortedDocs(doctype string) []scored {
	out := make([]scored, 0, len(s.docs[doctype]))
	for id, d := range s.docs[doctype] {
		out = append(out, scored{id: id, doc: d})
	}
	slices.SortFunc(out, func(a, b scored) int { return strings.Compare(a.id, b.id) })
	return out
}

func filter(docs []scored, p plan) []scored {
	var out []scored
	for _, d := range docs {
		date, hasDate := d.doc["date"].(float64)
		if p.from != nil && (!hasDate || int64(date) < *p.from) {
			continue
		}
		if p.to != nil && (!hasDate || int64(date) > *p.to) {
			continue
		}
		meta, _ := d.doc["metadata"].(map[string]any)
		ok := true
		for _, kv := range p.meta {
			if v, _ := meta[kv[0]].(string); v != kv[1] {
				ok = false
			}
		}
		if ok {
			out = append(out, d)
		}
	}
	return out
}

// bm25 is bm25(title) + bm25(text) over the documents matching any term
// (weakAnd), with Vespa's k1 = 1.2 and b = 0.75.
func bm25(docs []scored, terms []string) []scored {
	type field struct {
		tf  []map[string]int
		len []int
		avg float64
		df  map[string]int
	}
	build := func(name string) field {
		f := field{tf: make([]map[string]int, len(docs)), len: make([]int, len(docs)), df: map[string]int{}}
		total := 0
		for i, d := range docs {
			text, _ := d.doc[name].(string)
			toks := llm.Tokenize(text)
			f.tf[i] = map[string]int{}
			for _, t := range toks {
				f.tf[i][t]++
			}
			for t := range f.tf[i] {
				f.df[t]++
			}
			f.len[i] = len(toks)
			total += len(toks)
		}
		f.avg = math.Max(float64(total)/math.Max(float64(len(docs)), 1), 1)
		return f
	}
	fs := []field{build("title"), build("text")}
	n := float64(len(docs))
	var out []scored
	for i, d := range docs {
		score, match := 0.0, false
		for _, f := range fs {
			for _, t := range terms {
				tf := float64(f.tf[i][t])
				if tf == 0 {
					continue
				}
				match = true
				df := float64(f.df[t])
				idf := math.Log(1 + (n-df+0.5)/(df+0.5))
				score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(f.len[i])/f.avg))
			}
		}
		if match {
			d.score = score
			out = append(out, d)
		}
	}
	return out
}

// nearest is the k documents closest to q by angle, relevance
// closeness = 1/(1+angle) as the semantic rank profile computes it.
func nearest(docs []scored, q []float64, k int) []scored {
	var out []scored
	for _, d := range docs {
		v, _ := d.doc["embedding"].([]float64)
		var dot, nq, nv float64
		for i := range v {
			dot += q[i] * v[i]
			nq += q[i] * q[i]
			nv += v[i] * v[i]
		}
		cos := 0.0
		if nq > 0 && nv > 0 {
			cos = math.Max(-1, math.Min(1, dot/math.Sqrt(nq*nv)))
		}
		d.score = 1 / (1 + math.Acos(cos))
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	return out[:min(k, len(out))]
}

// queryTensor reads input.query(q): a JSON array, or the short-form
// tensor literal "[…]" as a string.
func queryTensor(v any) ([]float64, error) {
	if s, ok := v.(string); ok {
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("input.query(q): could not parse tensor literal %q", s)
		}
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != Dim {
		return nil, fmt.Errorf("input.query(q): want a tensor<float>(x[%d])", Dim)
	}
	out := make([]float64, Dim)
	for i, x := range arr {
		f, ok := x.(float64)
		if !ok {
			return nil, fmt.Errorf("input.query(q): values must be numbers")
		}
		out[i] = f
	}
	return out, nil
}
