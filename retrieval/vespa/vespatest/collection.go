package vespatest

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SetPage sets how many documents one visit or selection delete
// processes before it answers with a continuation token (default 7, so
// tests cross several continuations as Vespa's visitor does).
func (s *Server) SetPage(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.page = n
}

// collection serves Document v1 on /document/v1/<ns>/<doctype>/docid
// with a selection: GET visits (documents, documentCount, continuation),
// DELETE removes the selected documents a page at a time. As in Vespa, a
// selection is required for DELETE, and cluster must be given (this fake
// has one content cluster and accepts any name but none).
func (s *Server) collection(w http.ResponseWriter, r *http.Request, ns, doctype string) {
	pathID := r.URL.EscapedPath()
	docErr := func(status int, msg string) {
		writeJSON(w, status, map[string]string{"pathId": pathID, "message": msg})
	}
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(w, r, doctype, docErr) {
		return
	}
	if q.Get("cluster") == "" {
		docErr(http.StatusBadRequest, "Must specify 'cluster' parameter when there are multiple content clusters")
		return
	}
	sel, err := parseSelection(q.Get("selection"), doctype)
	if err != nil {
		docErr(http.StatusBadRequest, err.Error())
		return
	}
	if r.Method == http.MethodDelete && q.Get("selection") == "" {
		docErr(http.StatusBadRequest, "Must specify 'selection' parameter")
		return
	}
	// The continuation is the last document id processed: ids are visited
	// in order, so a page starts after it.
	after := q.Get("continuation")
	page := cmp.Or(s.page, 7)
	if n, err := strconv.Atoi(q.Get("wantedDocumentCount")); err == nil && n > 0 && r.Method == http.MethodGet {
		page = min(page, n)
	}
	ids := make([]string, 0, len(s.docs[doctype]))
	for id := range s.docs[doctype] {
		if id > after && sel.match(s.docs[doctype][id]) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	more := len(ids) > page
	ids = ids[:min(page, len(ids))]
	answer := map[string]any{"pathId": pathID, "documentCount": len(ids)}
	if more {
		answer["continuation"] = ids[len(ids)-1]
	}
	switch r.Method {
	case http.MethodGet:
		fieldSet := wantedFields(q.Get("fieldSet"), doctype)
		docs := make([]map[string]any, 0, len(ids))
		for _, id := range ids {
			fields := map[string]any{}
			for k, v := range s.docs[doctype][id] {
				if fieldSet == nil || fieldSet[k] {
					fields[k] = v
				}
			}
			docs = append(docs, map[string]any{"id": fmt.Sprintf("id:%s:%s::%s", ns, doctype, id), "fields": fields})
		}
		answer["documents"] = docs
	case http.MethodDelete:
		for _, id := range ids {
			delete(s.docs[doctype], id)
		}
	default:
		docErr(http.StatusMethodNotAllowed, "Method "+r.Method+" not supported here")
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

// wantedFields reads fieldSet "<doctype>:a,b"; nil means every field.
func wantedFields(fs, doctype string) map[string]bool {
	list, ok := strings.CutPrefix(fs, doctype+":")
	if !ok || list == "[all]" {
		return nil
	}
	out := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		out[f] = true
	}
	return out
}

// selection is a parsed document selection: the and of its comparisons.
type selection []comparison

type comparison struct {
	field string
	eq    bool // == or !=
	value any  // string or float64
}

var compRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([a-z_]+)\s*(==|!=)\s*("(?:[^"\\]|\\.)*"|-?\d+)$`)

// parseSelection understands the selections package vespa sends: the
// document type alone, or "<doctype>.<field> (==|!=) <string|integer>"
// comparisons joined by " and ".
func parseSelection(sel, doctype string) (selection, error) {
	sel = strings.TrimSpace(sel)
	if sel == "" || sel == doctype {
		return nil, nil
	}
	parts, err := splitAnd(sel)
	if err != nil {
		//lint:ignore ST1005 Vespa's own message, word for word
		return nil, fmt.Errorf("Failed to parse document selection string: %v", err)
	}
	var out selection
	for _, p := range parts {
		m := compRE.FindStringSubmatch(strings.TrimSpace(p))
		if m == nil {
			//lint:ignore ST1005 Vespa's own message, word for word
			return nil, fmt.Errorf("Failed to parse document selection string %q at %q", sel, p)
		}
		if m[1] != doctype {
			//lint:ignore ST1005 Vespa's own message, word for word
			return nil, fmt.Errorf("Document type %s in the selection is not %s", m[1], doctype)
		}
		if !fields[m[2]] {
			//lint:ignore ST1005 Vespa's own message, word for word
			return nil, fmt.Errorf("No field '%s' in the structure of type '%s'", m[2], doctype)
		}
		c := comparison{field: m[2], eq: m[3] == "=="}
		if strings.HasPrefix(m[4], `"`) {
			v, err := unquote(m[4])
			if err != nil {
				return nil, err
			}
			c.value = v
		} else {
			n, _ := strconv.ParseFloat(m[4], 64)
			c.value = n
		}
		out = append(out, c)
	}
	return out, nil
}

func (s selection) match(doc map[string]any) bool {
	for _, c := range s {
		if (doc[c.field] == c.value) != c.eq {
			return false
		}
	}
	return true
}
