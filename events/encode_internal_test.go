package events

import (
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
)

// FuzzEncodeAgreesWithSDK: validAttributes accepts exactly the id,
// source and type the CloudEvents SDK's Validate accepts.
func FuzzEncodeAgreesWithSDK(f *testing.F) {
	for _, s := range [][3]string{
		{"a/b/event/1", "/agentbus/orchestrator", "io.agentbus.workflow.status.v1"},
		{"", "/x", "t"}, {"  ", "/x", "t"}, {"id", "", "t"}, {"id", "%zz", "t"}, {"id", " ", "t"},
		{"id", "http://[::1", "t"}, {"id", "/x", " \t"}, {"id", "urn:a:b", "t"}, {"\u00a0", "/x", "t"},
		{"id", "//", "t"}, {"id", "//a", "t"}, {"id", "/a//b", "t"}, {"id", "/.", "t"}, {"id", "/a b", "t"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, id, source, typ string) {
		ev := cloudevents.New(SpecVersion)
		ev.SetID(id)
		ev.SetSource(source)
		ev.SetType(typ)
		sdk := ev.Validate()
		ours := validAttributes(Envelope{ID: id, Source: source, Type: Type(typ)})
		if (sdk == nil) != (ours == nil) {
			t.Fatalf("id %q source %q type %q: SDK says %v, validAttributes %v", id, source, typ, sdk, ours)
		}
	})
}
