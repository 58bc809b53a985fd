package routing

import (
	"slices"
	"strings"
)

// Builtin describes the built-in capabilities: what routing assumes is
// available when the input names none, and what it matches a query
// against.
var Builtin = map[string]string{
	"entity_extraction": "Extract named entities such as people, places, organisations, products, dates and numbers from a query, and resolve time expressions like last week into date ranges.",
	"query_enhancement": "Rewrite and expand a search query: keywords, synonyms, expansion terms and rephrased variants for parallel search.",
	"profile_selection": "Choose search profiles (keyword BM25, vector, hybrid) and whether to run an ensemble, from the query's intent, modality and complexity.",
	"search":            "Search the indexed documents and knowledge base for passages relevant to a question, with keyword and vector retrieval fused by rank.",
	"summarize":         "Summarize documents, search results or text into a short overview with the key points.",
	"detailed_report":   "Write a detailed report with analysis, comparison and citations of sources, for complex questions.",
	"memory":            "Remember and recall facts from earlier conversations and previous workflows of the user.",
	"echo":              "Echo the input and the outputs of dependencies back; show the data flow of a plan.",
}

// DefaultCapabilities are the capabilities assumed when the input names
// none, in a stable order.
var DefaultCapabilities = []string{
	"entity_extraction", "query_enhancement", "profile_selection", "search",
	"summarize", "detailed_report", "memory", "echo",
}

// keywordRules are the words and phrases that point at a capability.
var keywordRules = map[string]struct {
	words   map[string]bool
	phrases []string
}{
	"search": {set("search", "find", "lookup", "retrieve", "documents", "docs", "sources", "information", "articles", "papers"),
		[]string{"look up", "tell me about", "what is", "what are", "who is"}},
	"summarize": {set("summarize", "summarise", "summary", "tldr", "recap", "condense", "gist", "shorten", "briefly"),
		[]string{"tl dr", "key points", "in short"}},
	"detailed_report": {set("report", "analysis", "analyze", "analyse", "compare", "comparison", "detailed", "comprehensive",
		"evaluate", "versus", "vs", "pros", "tradeoffs", "thorough", "investigate"), []string{"in depth", "deep dive", "trade offs"}},
	"entity_extraction": {set("entities", "entity", "extract", "ner", "names", "people", "organizations", "organisations", "places"),
		[]string{"named entities", "who and where"}},
	"query_enhancement": {set("rephrase", "rewrite", "expand", "synonyms", "reformulate", "variants", "paraphrase"),
		[]string{"query expansion", "better query"}},
	"profile_selection": {set("profile", "profiles", "bm25", "ranking", "retriever"),
		[]string{"which search", "search strategy", "keyword or semantic", "semantic or keyword", "retrieval strategy"}},
	"memory": {set("remember", "recall", "earlier", "previous", "previously", "history", "memory", "forgot", "remind"),
		[]string{"last time", "we discussed", "you said", "i told you"}},
	"echo": {set("echo", "repeat", "ping"), []string{"data flow"}},
}

// matches returns the rule words and phrases of capability found in the
// query's words (and their lower-cased, blank-joined text).
func matches(capability string, words []string, text string) []string {
	r, ok := keywordRules[capability]
	if !ok {
		return nil
	}
	var out []string
	for _, w := range words {
		if r.words[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, p := range r.phrases {
		if strings.Contains(" "+text+" ", " "+p+" ") {
			out = append(out, p)
		}
	}
	return out
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
