package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"

	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Header names of the CloudEvents NATS binding in binary content mode.
const (
	HeaderID          = "ce-id"
	HeaderSource      = "ce-source"
	HeaderType        = "ce-type"
	HeaderSpecVersion = "ce-specversion"
	HeaderTime        = "ce-time"
	HeaderSubject     = "ce-subject"
	HeaderTenant      = "ce-tenantid"
	HeaderWorkflow    = "ce-workflowid"
	HeaderStep        = "ce-stepid"
	HeaderTraceParent = "ce-traceparent"
	// HeaderDataContentType carries the datacontenttype attribute, as the
	// NATS binding maps every attribute (binary mode, 3.1.3.1); the CloudEvents
	// SDK reads it from here, not from Content-Type.
	HeaderDataContentType = "ce-datacontenttype"
	// HeaderContentType is accepted on the way in (either it or
	// ce-datacontenttype is checked), as agents in other languages write
	// it; Encode no longer writes it (since November 2026): the
	// CloudEvents SDK does not, and it was 32 bytes of every stored event.
	HeaderContentType = "Content-Type"
	ContentTypeJSON   = "application/json"
	SpecVersion       = "1.0"
)

// ErrMalformed is wrapped by every *DecodeError.
var ErrMalformed = errors.New("events: malformed event")

// DecodeError says what was wrong with an incoming event and where: a header
// name, or a JSON pointer into the data prefixed by "data".
type DecodeError struct {
	Where  string
	Reason string
	// More lists the data's further problems found with the first, each
	// at "data" + a JSON pointer, so that a publisher outside Go (whose
	// event is otherwise only logged) can fix them all at once.
	More []schemas.Problem
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "events: malformed event at %s: %s", e.Where, e.Reason)
	for _, p := range e.More {
		fmt.Fprintf(&b, "; %s: %s", p.Pointer, p.Message)
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrMalformed) hold.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Envelope is one agentbus CloudEvent with its data still encoded as JSON.
// It is a plain value and safe to copy.
type Envelope struct {
	ID          string
	Source      string
	Type        Type
	Time        time.Time
	Subject     string // the CloudEvents subject attribute, not the NATS subject
	TenantID    string
	WorkflowID  string
	StepID      string
	TraceParent string
	Data        json.RawMessage
}

// New builds an envelope for payload. id should be the deterministic dedup key
// of the publish (see MsgID helpers) so that a retried publish repeats the id.
func New(typ Type, id, source, tenant, workflow, step string, payload any) (Envelope, error) {
	data, err := MarshalData(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: marshal %s: %w", typ, err)
	}
	return Envelope{
		ID: id, Source: source, Type: typ, Time: time.Now().UTC(),
		TenantID: tenant, WorkflowID: workflow, StepID: step, Data: data,
	}, nil
}

// Unmarshal decodes the envelope's data into v.
func (e Envelope) Unmarshal(v any) error {
	if err := UnmarshalData(e.Data, v); err != nil {
		return &DecodeError{Where: "data", Reason: err.Error()}
	}
	return nil
}

// Message is an encoded event, independent of any NATS client library.
type Message struct {
	Header map[string][]string
	Data   []byte
}

// encodedHeaders is the most headers Encode writes.
const encodedHeaders = 11

// Encode checks e as the CloudEvents SDK would (validAttributes) and
// returns it in binary content mode: attributes as ce- headers, data as
// the body.
func Encode(e Envelope) (Message, error) {
	if err := validAttributes(e); err != nil {
		return Message{}, err
	}
	if err := checkIDs(e); err != nil {
		return Message{}, err
	}
	// One array holds every value (each header's slice capped at its one
	// value, so that an append to it copies): Encode runs for every
	// message published, and a slice per header was most of its garbage.
	// Room for one header more, the dedup key the bus adds.
	vals := make([]string, 0, encodedHeaders)
	h := make(map[string][]string, encodedHeaders+1)
	set := func(k, v string) {
		if v != "" {
			vals = append(vals, v)
			n := len(vals)
			h[k] = vals[n-1 : n : n]
		}
	}
	set(HeaderSpecVersion, SpecVersion)
	set(HeaderID, e.ID)
	set(HeaderSource, e.Source)
	set(HeaderType, string(e.Type))
	set(HeaderDataContentType, ContentTypeJSON)
	set(HeaderTenant, e.TenantID)
	if !e.Time.IsZero() {
		set(HeaderTime, e.Time.UTC().Format(time.RFC3339Nano))
	}
	set(HeaderSubject, e.Subject)
	set(HeaderWorkflow, e.WorkflowID)
	set(HeaderStep, e.StepID)
	set(HeaderTraceParent, e.TraceParent)
	return Message{Header: h, Data: e.Data}, nil
}

// Decode reads a binary-mode CloudEvent from NATS headers and body, and
// rejects it with a *DecodeError if the envelope, an id, or the data (checked
// against the type's JSON Schema) is malformed.
func Decode(header map[string][]string, data []byte) (Envelope, error) {
	hv := readHeaders(header)
	get := func(k string) string { return hv.get(k) }
	for _, k := range []string{HeaderSpecVersion, HeaderID, HeaderSource, HeaderType} {
		if get(k) == "" {
			return Envelope{}, &DecodeError{Where: k, Reason: "required header is missing"}
		}
	}
	if v := get(HeaderSpecVersion); v != SpecVersion {
		return Envelope{}, &DecodeError{Where: HeaderSpecVersion, Reason: fmt.Sprintf("unsupported version %q, want %q", v, SpecVersion)}
	}
	for _, k := range []string{HeaderDataContentType, HeaderContentType} {
		if ct := get(k); ct != "" && !isJSON(ct) {
			return Envelope{}, &DecodeError{Where: k, Reason: fmt.Sprintf("content type %q, want %s", ct, ContentTypeJSON)}
		}
	}
	e := Envelope{
		ID: get(HeaderID), Source: get(HeaderSource), Type: Type(get(HeaderType)),
		Subject: get(HeaderSubject), TenantID: get(HeaderTenant), WorkflowID: get(HeaderWorkflow),
		StepID: get(HeaderStep), TraceParent: get(HeaderTraceParent), Data: data,
	}
	if e.TraceParent == "" {
		e.TraceParent = get(HeaderW3CTraceParent) // a bare publish with W3C's own header
	}
	if t := get(HeaderTime); t != "" {
		ts, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return Envelope{}, &DecodeError{Where: HeaderTime, Reason: "not an RFC 3339 timestamp"}
		}
		// An offset can push the instant out of RFC 3339's four-digit years
		// ("0000-01-01T00:00:00+01:00"); Encode could not write it back.
		if y := ts.UTC().Year(); y < 0 || y > 9999 {
			return Envelope{}, &DecodeError{Where: HeaderTime, Reason: "timestamp outside the years 0000-9999 in UTC"}
		}
		e.Time = ts.UTC()
	}
	if err := validAttributes(e); err != nil {
		return Envelope{}, &DecodeError{Where: "ce-*", Reason: strings.TrimPrefix(err.Error(), "events: encode "+string(e.Type)+": ")}
	}
	if !e.Type.Known() {
		return Envelope{}, &DecodeError{Where: HeaderType, Reason: fmt.Sprintf("unknown event type %q", e.Type)}
	}
	if e.TenantID == "" {
		return Envelope{}, &DecodeError{Where: HeaderTenant, Reason: "required header is missing"}
	}
	if err := checkIDs(e); err != nil {
		var te *subjects.TokenError
		if errors.As(err, &te) {
			return Envelope{}, &DecodeError{Where: "ce-" + te.Field + "id", Reason: te.Error()}
		}
		return Envelope{}, &DecodeError{Where: "ce-*", Reason: err.Error()}
	}
	if err := schemas.Validate(e.Type.Schema(), data); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 0 {
			p := ve.Problems[0]
			de := &DecodeError{Where: "data" + p.Pointer, Reason: p.Message}
			for _, q := range ve.Problems[1:] {
				de.More = append(de.More, schemas.Problem{Pointer: "data" + q.Pointer, Message: q.Message})
			}
			return Envelope{}, de
		}
		return Envelope{}, &DecodeError{Where: "data", Reason: err.Error()}
	}
	return e, nil
}

// validAttributes checks what the CloudEvents SDK's Validate checks of
// the attributes Encode sets — id, source and type present and not blank,
// source a URI-reference — without building an SDK event for every
// message published (it was 2.5 % of a busy orchestrator's CPU);
// FuzzEncodeAgreesWithSDK holds the two together.
func validAttributes(e Envelope) error {
	var bad []string
	if strings.TrimSpace(e.ID) == "" {
		bad = append(bad, "id: MUST be a non-empty string")
	}
	if !plainPath(e.Source) {
		if u, err := url.Parse(e.Source); err != nil {
			bad = append(bad, "source: "+err.Error())
		} else if strings.TrimSpace(u.String()) == "" {
			bad = append(bad, "source: REQUIRED")
		}
	}
	if strings.TrimSpace(string(e.Type)) == "" {
		bad = append(bad, "type: MUST be a non-empty string")
	}
	if len(bad) > 0 {
		return fmt.Errorf("events: encode %s: %s", e.Type, strings.Join(bad, "; "))
	}
	return nil
}

// plainPath reports whether s is a path of letters, digits and / . _ -
// starting with one slash (two start an authority), such as every source
// agentbus writes: a URI-reference url.Parse always accepts, checked
// without parsing it.
func plainPath(s string) bool {
	if len(s) < 2 || s[0] != '/' || s[1] == '/' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkIDs(e Envelope) error {
	if err := subjects.ValidTenant(e.TenantID); err != nil {
		return err
	}
	if e.WorkflowID != "" {
		if err := subjects.ValidWorkflow(e.WorkflowID); err != nil {
			return err
		}
	}
	if e.StepID != "" {
		if err := subjects.ValidStep(e.StepID); err != nil {
			return err
		}
	}
	return nil
}

// decodeHeaders are the headers Decode reads.
var decodeHeaders = [...]string{HeaderSpecVersion, HeaderID, HeaderSource, HeaderType, HeaderTime, HeaderSubject,
	HeaderTenant, HeaderWorkflow, HeaderStep, HeaderTraceParent, HeaderW3CTraceParent, HeaderDataContentType, HeaderContentType}

// headerValues are the values of decodeHeaders in one message, by index.
type headerValues [len(decodeHeaders)]string

// readHeaders finds every header Decode reads in one pass, as lookup
// would one by one: asking lookup for each of them costs a scan of every
// header per absent one (a dozen EqualFolds apiece), on a path that runs
// for every event every subscriber reads.
func readHeaders(h map[string][]string) headerValues {
	var out headerValues
	var found uint32
	n := 0
	for i, k := range decodeHeaders {
		if v, ok := h[k]; ok {
			n++
			if len(v) > 0 {
				out[i] = v[0]
				found |= 1 << i // present under its own name: no other spelling is asked for
			}
		}
	}
	if n == len(h) {
		return out // no other header to fold
	}
	for k, v := range h {
		if len(v) == 0 {
			continue
		}
		for i, name := range decodeHeaders {
			if found&(1<<i) == 0 && len(k) == len(name) && strings.EqualFold(k, name) {
				out[i] = v[0]
				found |= 1 << i
			}
		}
	}
	return out
}

// get is the value of key, one of decodeHeaders.
func (hv *headerValues) get(key string) string {
	for i, k := range decodeHeaders {
		if k == key {
			return hv[i]
		}
	}
	return ""
}

// lookup finds a header case-insensitively: nats.go keeps header names as
// sent, and some clients canonicalise them (Ce-Id).
func lookup(h map[string][]string, key string) string {
	if v, ok := h[key]; ok && len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// isJSON reports whether a Content-Type names JSON, parameters allowed.
func isJSON(ct string) bool {
	if ct == ContentTypeJSON {
		return true // what every Go publisher sends: no parse
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == ContentTypeJSON
}
