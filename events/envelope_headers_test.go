package events

import (
	"testing"
)

// TestReadHeadersIsLookup: one pass finds what lookup finds, header by
// header, whatever the case the headers were sent in.
func TestReadHeadersIsLookup(t *testing.T) {
	for _, h := range []map[string][]string{
		{},
		{HeaderID: {"1"}, HeaderType: {"t"}, "Nats-Msg-Id": {"x"}},
		{"Ce-Id": {"1"}, "CE-TYPE": {"t"}, "content-type": {"application/json"}, "TraceParent": {"00-1"}},
		{HeaderID: {}, "Ce-Id": {"2"}, HeaderSource: {"s", "t"}},
		{HeaderTenant: {"a"}, "Ce-TenantId": {"b"}},
	} {
		hv := readHeaders(h)
		for _, k := range decodeHeaders {
			if got, want := hv.get(k), lookup(h, k); got != want {
				t.Errorf("%v: %s = %q, lookup says %q", h, k, got, want)
			}
		}
	}
}
