package enhance

import "strings"

// synonymGroups are words that can stand for each other in a search; the
// first word of a group is its preferred form. Small on purpose: common
// search, technical and everyday words.
var synonymGroups = [][]string{
	{"search", "find", "lookup", "retrieve"},
	{"fast", "quick", "rapid"},
	{"slow", "sluggish", "laggy"},
	{"improve", "enhance", "boost", "optimize", "optimise"},
	{"speed up", "accelerate"},
	{"error", "failure", "fault", "exception"},
	{"bug", "defect", "issue"},
	{"problem", "issue", "trouble"},
	{"fix", "repair", "resolve", "solve"},
	{"install", "setup", "set up"},
	{"configure", "config", "configuration", "settings"},
	{"database", "db", "datastore"},
	{"kubernetes", "k8s"},
	{"postgresql", "postgres"},
	{"javascript", "js"},
	{"typescript", "ts"},
	{"golang", "go"},
	{"machine learning", "ml"},
	{"artificial intelligence", "ai"},
	{"large language model", "llm"},
	{"documentation", "docs", "manual", "reference"},
	{"tutorial", "guide", "walkthrough"},
	{"example", "sample", "demo"},
	{"compare", "contrast"},
	{"versus", "vs"},
	{"difference", "distinction"},
	{"best", "top", "recommended"},
	{"cheap", "inexpensive", "affordable"},
	{"price", "cost", "pricing"},
	{"buy", "purchase"},
	{"car", "automobile", "vehicle"},
	{"house", "home"},
	{"big", "large", "huge"},
	{"small", "little", "tiny"},
	{"use", "utilize", "apply"},
	{"create", "make", "build", "generate"},
	{"delete", "remove", "erase"},
	{"update", "upgrade"},
	{"start", "begin", "launch"},
	{"stop", "halt", "terminate"},
	{"show", "display", "list"},
	{"security", "protection"},
	{"vulnerability", "exploit", "cve"},
	{"memory", "ram"},
	{"storage", "disk"},
	{"summary", "overview", "recap", "synopsis"},
	{"news", "updates", "headlines"},
	{"latest", "recent", "newest"},
	{"job", "career", "employment"},
	{"salary", "pay", "wage"},
	{"doctor", "physician"},
	{"medicine", "medication", "drug"},
	{"illness", "disease", "sickness"},
	{"benefits", "advantages", "pros"},
	{"drawbacks", "disadvantages", "cons"},
	{"query", "queries", "request"},
	{"server", "host"},
	{"message", "msg"},
	{"performance", "throughput", "latency"},
	{"scale", "scaling", "scalability"},
}

// related are terms that widen a search on a word without meaning the same.
var related = map[string][]string{
	"kubernetes":       {"container orchestration"},
	"postgresql":       {"sql", "database"},
	"database":         {"sql", "index"},
	"machine learning": {"model training"},
	"performance":      {"benchmark"},
	"error":            {"troubleshooting"},
	"security":         {"authentication", "encryption"},
	"search":           {"ranking", "index"},
	"vector":           {"embedding", "similarity"},
	"embedding":        {"vector"},
	"rag":              {"retrieval augmented generation"},
	"nats":             {"messaging", "jetstream"},
	"price":            {"discount"},
	"climate":          {"emissions", "temperature"},
}

// thesaurus maps a term to its synonyms, preferred form first.
var thesaurus = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		for _, w := range g {
			for _, o := range g {
				if o != w && !contains(m[w], o) {
					m[w] = append(m[w], o)
				}
			}
		}
	}
	return m
}()

// stopwords carry no search signal of their own.
var stopwords = set(
	"a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "is", "are", "was", "were",
	"be", "been", "it", "its", "this", "that", "these", "those", "me", "my", "i", "you", "your", "we",
	"our", "what", "which", "who", "whom", "how", "why", "when", "where", "please", "can", "could",
	"would", "should", "do", "does", "did", "from", "by", "at", "as", "about", "into", "there", "their",
	"tell", "show", "give", "some", "any", "all", "up", "is", "am", "will", "shall", "may", "might",
	"if", "then", "so", "than", "too", "very", "just", "also", "get", "one", "s", "t",
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
