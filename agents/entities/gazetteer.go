package entities

import (
	"regexp"
	"sort"
	"strings"
)

// Entity types. The heuristic uses these; an LLM may add others (the
// output schema accepts any upper-case name).
const (
	TypePerson  = "PERSON"
	TypePlace   = "PLACE"
	TypeOrg     = "ORG"
	TypeConcept = "CONCEPT"
	TypeDate    = "DATE"
	TypeProduct = "PRODUCT"
	TypeEvent   = "EVENT"
	TypeNumber  = "NUMBER"
)

// gazetteer maps a lower-case name to its type. Names marked with a
// leading "^" are also ordinary words ("turkey", "apple", "us") and count
// only when written with a capital.
var gazetteer = build(map[string][]string{
	TypePlace: {
		"united states", "usa", "^US", "united kingdom", "^UK", "france", "germany", "spain", "italy",
		"japan", "^china", "india", "brazil", "canada", "mexico", "australia", "russia", "ukraine",
		"egypt", "nigeria", "kenya", "south africa", "argentina", "sweden", "norway", "netherlands",
		"switzerland", "poland", "^turkey", "south korea", "indonesia", "vietnam", "israel", "iran",
		"saudi arabia", "europe", "asia", "africa", "north america", "south america",
		"new york", "new york city", "london", "paris", "berlin", "tokyo", "beijing", "shanghai",
		"mumbai", "delhi", "san francisco", "los angeles", "chicago", "seattle", "boston", "toronto",
		"sydney", "madrid", "rome", "moscow", "amsterdam", "singapore", "hong kong", "dubai", "cairo",
		"lagos", "nairobi", "mexico city", "seoul", "bangalore", "zurich", "vienna", "silicon valley",
	},
	TypeOrg: {
		"google", "microsoft", "^apple", "^amazon", "^meta", "openai", "anthropic", "ibm", "intel",
		"nvidia", "tesla", "netflix", "nasa", "united nations", "european union", "^EU", "mit",
		"stanford", "harvard", "^oracle", "github", "mozilla", "linux foundation", "cncf", "synadia",
		"red hat", "world health organization", "world bank", "imf", "spacex", "samsung", "deepmind",
	},
	TypeProduct: {
		"kubernetes", "k8s", "docker", "kafka", "nats", "jetstream", "postgresql", "postgres", "mysql",
		"redis", "elasticsearch", "vespa", "linux", "^windows", "iphone", "android", "chatgpt",
		"gpt-4", "terraform", "react", "sqlite", "mongodb", "aws", "azure", "excel",
	},
	TypeConcept: {
		"machine learning", "deep learning", "artificial intelligence", "ai", "neural network",
		"neural networks", "large language model", "large language models", "llm", "llms",
		"retrieval augmented generation", "rag", "vector search", "vector database", "semantic search",
		"full text search", "bm25", "reciprocal rank fusion", "rrf", "embeddings", "transformer",
		"transformers", "consensus", "raft", "paxos", "microservices", "event sourcing",
		"cloud computing", "quantum computing", "blockchain", "cryptography", "climate change",
		"renewable energy", "inflation", "interest rates", "api", "rest api", "graphql", "websocket",
		"websockets", "json", "http", "tls", "oauth", "golang", "python", "javascript", "typescript",
		"^rust", "^java", "sql", "devops", "observability",
	},
})

type gazEntry struct {
	typ      string
	needsCap bool
}

type gaz struct {
	entries map[string]gazEntry
	re      *regexp.Regexp
}

func build(byType map[string][]string) gaz {
	g := gaz{entries: map[string]gazEntry{}}
	var names []string
	for typ, list := range byType {
		for _, n := range list {
			e := gazEntry{typ: typ}
			if strings.HasPrefix(n, "^") {
				n, e.needsCap = n[1:], true
			}
			n = strings.ToLower(n)
			g.entries[n] = e
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	// Longest first, so that "new york city" wins over "new york".
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	g.re = regexp.MustCompile(`(?i)\b(?:` + strings.Join(names, "|") + `)\b`)
	return g
}

// lookup reports the type of a name written as text, or "".
func (g gaz) lookup(text string) string {
	e, ok := g.entries[strings.ToLower(text)]
	if !ok || (e.needsCap && !startsUpper(text)) {
		return ""
	}
	return e.typ
}

// Suffixes and prefixes that type a capitalised span.
var (
	orgSuffixes = set("inc", "inc.", "corp", "corp.", "corporation", "ltd", "ltd.", "llc", "gmbh", "ag",
		"foundation", "university", "institute", "company", "co", "co.", "group", "labs", "bank",
		"association", "agency", "council", "ministry", "department", "college", "exchange", "times",
		"society", "partners", "technologies", "systems")
	orgPrefixes   = set("university", "bank", "institute", "ministry", "department", "college")
	placeSuffixes = set("city", "river", "lake", "mountains", "mountain", "bay", "island", "islands",
		"valley", "street", "avenue", "park", "bridge", "county", "state", "province", "ocean", "sea", "desert")
	placePrefixes = set("mount", "lake", "cape", "port", "fort", "saint", "st", "st.")
	eventSuffixes = set("olympics", "conference", "summit", "war", "festival", "cup", "expo", "championship",
		"election", "agreement", "treaty", "accord", "revolution", "games", "awards", "crisis", "pandemic")
	// connectors may sit inside a capitalised name: "Bank of America".
	connectors = set("of", "de", "the", "for", "von", "van", "la", "del", "du", "da", "&")
	// leadWords are capitalised only because they begin a sentence.
	leadWords = set("what", "who", "whom", "whose", "where", "when", "why", "how", "which", "is", "are",
		"was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "tell", "show",
		"find", "compare", "explain", "list", "give", "search", "summarize", "summarise", "describe",
		"the", "a", "an", "in", "on", "for", "of", "please", "get", "best", "top", "latest", "recent",
		"news", "about", "any", "my", "our", "i", "we", "you", "it", "this", "that", "these", "those",
		"why", "has", "have", "had", "from", "to", "and", "or", "but", "if", "at", "by", "with", "since",
		"between", "during", "look", "help", "write", "create", "make", "analyze", "analyse", "define",
		"latest", "report", "give", "who's", "what's", "how's", "where's")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
