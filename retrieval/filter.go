package retrieval

import (
	"fmt"
	"time"
)

// IsZero reports whether f restricts nothing.
func (f Filters) IsZero() bool {
	return f.From.IsZero() && f.To.IsZero() && len(f.Metadata) == 0
}

// Match reports whether a chunk with this date and metadata passes f:
// its date lies in [From, To] (a chunk without a date passes only when both
// bounds are zero) and, for every key of f.Metadata, the chunk's metadata
// has that key with that value. A non-string metadata value is compared in
// its fmt.Sprint form, so 5 matches "5" and true matches "true". Backends
// that cannot filter inside their query engine post-filter with Match.
func (f Filters) Match(date time.Time, metadata map[string]any) bool {
	if !f.From.IsZero() || !f.To.IsZero() {
		if date.IsZero() {
			return false
		}
		if !f.From.IsZero() && date.Before(f.From) {
			return false
		}
		if !f.To.IsZero() && date.After(f.To) {
			return false
		}
	}
	for k, want := range f.Metadata {
		v, ok := metadata[k]
		if !ok || MetadataString(v) != want {
			return false
		}
	}
	return true
}

// MetadataString is the form a metadata value takes when compared with a
// metadata filter: a string as is, anything else as fmt.Sprint prints it.
func MetadataString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
