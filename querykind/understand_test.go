package querykind_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/agentbus/agentbus/querykind"
)

func TestUnderstand(t *testing.T) {
	tests := []struct {
		query, search, intent string
		idents, sides         []string
		detail                bool
	}{
		{"compare sync.Mutex and sync.RWMutex in detail", "sync.Mutex sync.RWMutex", querykind.IntentCompare,
			[]string{"sync.Mutex", "sync.RWMutex"}, []string{"sync.Mutex", "sync.RWMutex"}, true},
		{"sync.Mutex vs sync.RWMutex", "sync.Mutex sync.RWMutex", querykind.IntentCompare,
			[]string{"sync.Mutex", "sync.RWMutex"}, []string{"sync.Mutex", "sync.RWMutex"}, false},
		{"sync.Mutex vs. sync.RWMutex: which is faster for reads?", "sync.Mutex sync.RWMutex faster reads", querykind.IntentCompare,
			[]string{"sync.Mutex", "sync.RWMutex"}, []string{"sync.Mutex", "sync.RWMutex"}, false},
		{"sync.Mutex versus sync.RWMutex", "sync.Mutex sync.RWMutex", querykind.IntentCompare,
			[]string{"sync.Mutex", "sync.RWMutex"}, []string{"sync.Mutex", "sync.RWMutex"}, false},
		{"what is the difference between a slice and an array in Go", "slice array", querykind.IntentCompare,
			nil, []string{"slice", "array"}, false},
		{"differences between buffered and unbuffered channels", "buffered unbuffered channels", querykind.IntentCompare,
			nil, []string{"buffered channels", "unbuffered channels"}, false},
		{"should I use sync.Mutex or a channel", "sync.Mutex channel", querykind.IntentCompare,
			[]string{"sync.Mutex"}, []string{"sync.Mutex", "channel"}, false},
		{"bytes.Buffer or strings.Builder", "bytes.Buffer strings.Builder", querykind.IntentCompare,
			[]string{"bytes.Buffer", "strings.Builder"}, []string{"bytes.Buffer", "strings.Builder"}, false},
		{"how do json.Marshal and gob differ", "json.Marshal gob", querykind.IntentCompare,
			[]string{"json.Marshal"}, []string{"json.Marshal", "gob"}, false},
		{"encoding/json compared to encoding/gob", "encoding/json encoding/gob", querykind.IntentCompare,
			nil, []string{"encoding/json", "encoding/gob"}, false},
		{"compare the performance of bytes.Buffer and strings.Builder", "performance bytes.Buffer strings.Builder", querykind.IntentCompare,
			[]string{"bytes.Buffer", "strings.Builder"}, []string{"bytes.Buffer", "strings.Builder"}, false},
		{"how do I read a file line by line with bufio.Scanner", "read file line line bufio.Scanner", querykind.IntentHowTo,
			[]string{"bufio.Scanner"}, nil, false},
		{"make an HTTP call with a timeout", "make HTTP call timeout", querykind.IntentLookup, nil, nil, false},
		{"explain context cancellation in depth", "context cancellation", querykind.IntentExplain, nil, nil, true},
		{"how does http.Client.Do work", "http.Client.Do", querykind.IntentExplain, []string{"http.Client.Do"}, nil, false},
		{"tell me about io.Reader thoroughly", "io.Reader", querykind.IntentExplain, []string{"io.Reader"}, nil, true},
		{"read or write a file", "read write file", querykind.IntentLookup, nil, nil, false},
		{"protect against timing attacks", "protect against timing attacks", querykind.IntentLookup, nil, nil, false},
		{"when does WaitGroup.Wait return, e.g. after Add", "WaitGroup.Wait return after Add", querykind.IntentLookup,
			[]string{"WaitGroup.Wait"}, nil, false},
		{"compare two values and return -1, 0 or +1 for ordering", "compare two values return 1 0 1 ordering",
			querykind.IntentLookup, nil, nil, false},
		{"parse Go source code in Go", "parse Go source code", querykind.IntentLookup, nil, nil, false},
		{"the the the", "the the the", querykind.IntentLookup, nil, nil, false},
		{"compare", "compare", querykind.IntentCompare, nil, nil, false},
		{"", "", querykind.IntentLookup, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			u := querykind.Understand(tt.query)
			if u.Query != tt.query || u.Search != tt.search || u.Intent != tt.intent || u.Detail != tt.detail ||
				!slices.Equal(u.Identifiers, tt.idents) || !slices.Equal(u.Sides, tt.sides) {
				t.Fatalf("Understand(%q) =\n %+v, want search %q intent %s detail %v identifiers %q sides %q",
					tt.query, u, tt.search, tt.intent, tt.detail, tt.idents, tt.sides)
			}
			if tt.sides == nil && u.Sides != nil {
				t.Fatalf("sides = %#v, want nil", u.Sides)
			}
		})
	}
}

func TestIdentifiers(t *testing.T) {
	u := querykind.Understand("use `sync.Once`, RWMutex, ReadAll() and net/http — not JSON, Go, e.g. or v1.2")
	if want := []string{"sync.Once", "RWMutex", "ReadAll"}; !slices.Equal(u.Identifiers, want) {
		t.Fatalf("identifiers = %q, want %q", u.Identifiers, want)
	}
}

func FuzzUnderstand(f *testing.F) {
	for _, s := range []string{"compare sync.Mutex and sync.RWMutex in detail", "A vs B vs C", "difference between , and",
		"how do I", "or", "vs.", "x.y.z or a.b", "héllo wörld ü.ß", "\xff\xfe", "compare of and of", "differ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		u := querykind.Understand(q)
		if u.Query != q {
			t.Fatalf("Query = %q, want %q", u.Query, q)
		}
		hasWord := strings.IndexFunc(q, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
		if hasWord && u.Search == "" {
			t.Fatalf("Understand(%q): empty search", q)
		}
		if !slices.Contains([]string{querykind.IntentCompare, querykind.IntentExplain, querykind.IntentHowTo, querykind.IntentLookup}, u.Intent) {
			t.Fatalf("intent %q", u.Intent)
		}
		if u.Sides != nil && (len(u.Sides) < 2 || u.Intent != querykind.IntentCompare) {
			t.Fatalf("Understand(%q): sides %q with intent %s", q, u.Sides, u.Intent)
		}
		for _, s := range u.Sides {
			if s == "" {
				t.Fatalf("Understand(%q): empty side in %q", q, u.Sides)
			}
		}
		for _, id := range u.Identifiers {
			if !strings.Contains(q, id) || !strings.Contains(u.Search, id) {
				t.Fatalf("Understand(%q): identifier %q not in query or search %q", q, id, u.Search)
			}
		}
		if again := querykind.Understand(q); fmt.Sprint(again) != fmt.Sprint(u) {
			t.Fatalf("not deterministic: %+v then %+v", u, again)
		}
	})
}

func ExampleUnderstand() {
	u := querykind.Understand("compare sync.Mutex and sync.RWMutex in detail")
	fmt.Println(u.Intent, u.Detail)
	fmt.Printf("%q\n", u.Search)
	fmt.Printf("%q\n", u.Sides)
	// Output:
	// compare true
	// "sync.Mutex sync.RWMutex"
	// ["sync.Mutex" "sync.RWMutex"]
}
