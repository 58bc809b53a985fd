package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Idempotent submission (#23): a client names a submission with a key of
// its choosing, and every submission of the tenant with that key within
// IdempotencyWindow is answered with the workflow the first one started —
// stored once, however often and however concurrently it is sent. The key
// is recorded (Claims, the bucket subjects.BucketIdempotency) before the
// submission is published, with a hash of the request (RequestHash), so
// that the same key sent with another request is refused
// (*KeyReusedError) instead of silently answering for a different one.

// IdempotencyWindow is how long a key is remembered: the TTL of
// subjects.BucketIdempotency. A key sent again later starts a new workflow.
const IdempotencyWindow = 24 * time.Hour

// MaxIdempotencyKey bounds a key's length, in bytes.
const MaxIdempotencyKey = 255

// idempotencyKeyPattern is the grammar of keys: what a UUID, a ULID, a
// base64 (standard or URL) digest or a "order-1234:retry" label is made
// of, and nothing that needs quoting in a header or a shell.
var idempotencyKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._~:+/=-]{1,255}$`)

// IdempotencyKeyRule is the key grammar in words, for error messages.
const IdempotencyKeyRule = "1 to 255 characters of A-Z a-z 0-9 . _ ~ : + / = -"

// ErrInvalidKey is wrapped by the error of ValidIdempotencyKey.
var ErrInvalidKey = errors.New("api: invalid idempotency key")

// ValidIdempotencyKey reports whether key is a valid idempotency key
// (IdempotencyKeyRule); the error wraps ErrInvalidKey.
func ValidIdempotencyKey(key string) error {
	if !idempotencyKeyPattern.MatchString(key) {
		if len(key) > MaxIdempotencyKey {
			return fmt.Errorf("%w: %d bytes, want %s", ErrInvalidKey, len(key), IdempotencyKeyRule)
		}
		return fmt.Errorf("%w: %q, want %s", ErrInvalidKey, key, IdempotencyKeyRule)
	}
	return nil
}

// IdempotencyRecord is what subjects.BucketIdempotency holds for a key:
// the workflow its first submission started, the hash of that request
// (RequestHash) and when it was recorded. It is plain data, safe to share.
type IdempotencyRecord struct {
	WorkflowID  string    `json:"workflow_id"`
	RequestHash string    `json:"request_hash"`
	CreatedAt   time.Time `json:"created_at"`
}

// RequestHash is the hash a key's record keeps of its request: the hex
// SHA-256 of the normalised submission — the JSON that encoding/json
// writes for {"workflow_id": workflow, "submission": sub} — not of the
// bytes received. Two bodies that differ only in spacing, key order or
// fields left at their defaults are the same request; a different query,
// plan, metadata, session, priority or user is another. workflow is the
// id the client asked for, "" when the server picks one (the id picked is
// no part of the request).
func RequestHash(workflow string, sub events.WorkflowSubmitted) string {
	b, err := json.Marshal(struct {
		WorkflowID string                   `json:"workflow_id"`
		Submission events.WorkflowSubmitted `json:"submission"`
	}{workflow, sub})
	if err != nil {
		// A WorkflowSubmitted always marshals (it was decoded from JSON or
		// built of plain values); were it ever not to, no two hashes match.
		b = []byte(uuid.NewString())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Claims records idempotency keys, first writer wins: *bus.KV on
// subjects.BucketIdempotency is one (bus.Bus.Idempotency opens it).
type Claims interface {
	// Claimed returns the value key holds, or nil when it holds none.
	Claimed(ctx context.Context, key string) ([]byte, error)
	// Claim stores value under key unless the key holds a value already:
	// nil when it stored value, else the value held, left as it is.
	Claim(ctx context.Context, key string, value []byte) ([]byte, error)
}

// ErrKeyReused is wrapped by *KeyReusedError.
var ErrKeyReused = errors.New("api: idempotency key reused")

// KeyReusedError says that an idempotency key was sent with a request
// other than the one it was first sent with, within IdempotencyWindow:
// the workflow that one started is Workflow. The answer over HTTP is 409
// idempotency_key_reused.
type KeyReusedError struct {
	Key      string
	Workflow string
}

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("api: idempotency key %q was sent with another request within the last 24 hours (it started workflow %s): "+
		"send that request again, or use a new key for a new one", e.Key, e.Workflow)
}

// Unwrap lets errors.Is(err, ErrKeyReused) hold.
func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }

// ErrWorkflowExists: a submission asked for a workflow id that is taken.
// The answer over HTTP is 409 exists.
var ErrWorkflowExists = errors.New("api: workflow exists")

// StoreError says that the submission of Workflow could not be stored:
// Err is the Publisher's error, as it is. Sending the same submission
// again (the same workflow id, or the same idempotency key) stores it
// once.
type StoreError struct {
	Workflow string
	Err      error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("api: store submission %s: %v", e.Workflow, e.Err)
}

// Unwrap returns the Publisher's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Once is what SubmitOnce needs besides what Submit does. Every field but
// Exists is optional. It is plain data; its functions must be safe for
// concurrent use if SubmitOnce is called concurrently.
type Once struct {
	// Key is the client's idempotency key (ValidIdempotencyKey); "" for
	// none, and then Claims is not used.
	Key string
	// Claims records keys; required with a Key.
	Claims Claims
	// Exists reports whether a workflow is recorded already (its
	// checkpoint exists).
	Exists func(ctx context.Context, workflow string) (bool, error)
	// Admit, when set, is asked before a new workflow's submission is
	// stored whether it may be (a tenant's quota): its error is returned
	// as it is, and nothing is stored. The function it returns, if not
	// nil, is called if the submission is not stored after all (a
	// concurrent one with the same key was first, or the publish failed).
	Admit func(ctx context.Context) (undo func(), err error)
}

// SubmitOnce submits a new workflow: Submit, after the checks every front
// door makes, and at most once per tenant and idempotency key within
// IdempotencyWindow. workflow is the id the client asked for, "" to have
// one picked (a UUIDv7).
//
// Without a key: a workflow id that exists is ErrWorkflowExists, an
// Admit error is returned as it is, then the submission is published.
//
// With a key, its record is looked up first. None: the checks above, then
// the key is claimed (KV create: of concurrent claims one wins, and the
// others go on as replays) and the submission published. A record of the
// same request (RequestHash): a replay — the answer names the recorded
// workflow, with Replayed set, and nothing new is stored, except that a
// recorded workflow that does not exist yet is published again (with the
// same dedup id: its first publish may have failed, or its gateway died
// between the claim and the publish). A record of another request is a
// *KeyReusedError. A claim whose publish failed stays: the client's next
// try with the key publishes it.
//
// A publish that fails is a *StoreError. The answer is Submit's: status
// queued, without URLs.
func SubmitOnce[A any](ctx context.Context, p Publisher[A], o Once, source, tenant, workflow string, sub events.WorkflowSubmitted) (SubmitResponse, error) {
	if _, err := subjects.Submit(tenant); err != nil {
		return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
	}
	if workflow != "" {
		if err := subjects.ValidWorkflow(workflow); err != nil {
			return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
		}
	}
	requested := workflow
	if workflow == "" {
		workflow = newWorkflowID()
	}
	if o.Key == "" {
		undo, err := o.admit(ctx, tenant, requested)
		if err != nil {
			return SubmitResponse{}, err
		}
		return publish(ctx, p, source, tenant, workflow, sub, undo)
	}
	if err := ValidIdempotencyKey(o.Key); err != nil {
		return SubmitResponse{}, err
	}
	if o.Claims == nil {
		return SubmitResponse{}, errors.New("api: submit with an idempotency key: no Claims")
	}
	rk, err := subjects.IdempotencyKey(tenant, o.Key)
	if err != nil {
		return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
	}
	hash := RequestHash(requested, sub)
	held, err := o.Claims.Claimed(ctx, rk)
	if err != nil {
		return SubmitResponse{}, fmt.Errorf("api: idempotency key: %w", err)
	}
	if held != nil {
		return replay(ctx, p, o, source, tenant, hash, held, sub)
	}
	undo, err := o.admit(ctx, tenant, requested)
	if err != nil {
		return SubmitResponse{}, err
	}
	rec, _ := json.Marshal(IdempotencyRecord{WorkflowID: workflow, RequestHash: hash, CreatedAt: time.Now().UTC()})
	if held, err = o.Claims.Claim(ctx, rk, rec); err != nil || held != nil {
		undo()
		if err != nil {
			return SubmitResponse{}, fmt.Errorf("api: idempotency key: %w", err)
		}
		return replay(ctx, p, o, source, tenant, hash, held, sub)
	}
	return publish(ctx, p, source, tenant, workflow, sub, undo)
}

// admit checks that a requested workflow id is free and asks Admit; the
// function returned undoes what Admit did (never nil).
func (o Once) admit(ctx context.Context, tenant, requested string) (func(), error) {
	if requested != "" && o.Exists != nil {
		exists, err := o.Exists(ctx, requested)
		if err != nil {
			return nil, fmt.Errorf("api: workflow %s: %w", requested, err)
		}
		if exists {
			return nil, fmt.Errorf("%w: %q (tenant %s)", ErrWorkflowExists, requested, tenant)
		}
	}
	undo := func() {}
	if o.Admit != nil {
		u, err := o.Admit(ctx)
		if err != nil {
			return nil, err
		}
		if u != nil {
			undo = u
		}
	}
	return undo, nil
}

// replay answers a submission whose key holds the record held: the
// recorded workflow if the request is the same, published again if it
// does not exist yet; a *KeyReusedError if it is not.
func replay[A any](ctx context.Context, p Publisher[A], o Once, source, tenant, hash string, held []byte, sub events.WorkflowSubmitted) (SubmitResponse, error) {
	var rec IdempotencyRecord
	if err := json.Unmarshal(held, &rec); err != nil || subjects.ValidWorkflow(rec.WorkflowID) != nil {
		return SubmitResponse{}, fmt.Errorf("api: idempotency key %q: unreadable record %q", o.Key, held)
	}
	if rec.RequestHash != hash {
		return SubmitResponse{}, &KeyReusedError{Key: o.Key, Workflow: rec.WorkflowID}
	}
	exists := false
	if o.Exists != nil {
		var err error
		if exists, err = o.Exists(ctx, rec.WorkflowID); err != nil {
			return SubmitResponse{}, fmt.Errorf("api: workflow %s: %w", rec.WorkflowID, err)
		}
	}
	var resp SubmitResponse
	if exists {
		evSubj, err := subjects.Events(tenant, rec.WorkflowID)
		if err != nil {
			return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
		}
		resp = SubmitResponse{WorkflowID: rec.WorkflowID, TenantID: tenant, Status: StatusQueued, EventsSubject: evSubj}
	} else {
		var err error
		if resp, err = publish(ctx, p, source, tenant, rec.WorkflowID, sub, func() {}); err != nil {
			return SubmitResponse{}, err
		}
	}
	resp.Replayed = true
	return resp, nil
}

// publish is Submit, whose failure undoes what Admit did and is a
// *StoreError.
func publish[A any](ctx context.Context, p Publisher[A], source, tenant, workflow string, sub events.WorkflowSubmitted, undo func()) (SubmitResponse, error) {
	resp, err := Submit(ctx, p, source, tenant, workflow, sub)
	if err != nil {
		undo()
		return SubmitResponse{}, &StoreError{Workflow: workflow, Err: err}
	}
	return resp, nil
}

// newWorkflowID returns a time-ordered UUID (v7), a valid workflow token.
func newWorkflowID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

// ClaimDelivered is an orchestrator's check of a submission delivered with
// NATSIdempotencyHeader, which a submitter that publishes by itself (the
// nats CLI, a program without the SDK) may set and which SubmitOnce never
// did: it claims key for workflow, as SubmitOnce would have, and says
// whether to start it. The request is hashed without its workflow id
// (RequestHash("", sub)): a submitter's ce-id is a dedup id, no part of
// what it asks for.
//
// It answers "" when the workflow is to start (the key is new, or its
// record names this very workflow: a redelivery); the id of the workflow
// the same request started earlier when this one is a duplicate, not to
// be started; a *KeyReusedError when the key came with another request,
// not to be started either (its events should say why); an error wrapping
// ErrInvalidKey for a key that is not one.
func ClaimDelivered(ctx context.Context, c Claims, tenant, key, workflow string, sub events.WorkflowSubmitted) (string, error) {
	if err := ValidIdempotencyKey(key); err != nil {
		return "", err
	}
	rk, err := subjects.IdempotencyKey(tenant, key)
	if err != nil {
		return "", fmt.Errorf("api: idempotency key: %w", err)
	}
	hash := RequestHash("", sub)
	rec, _ := json.Marshal(IdempotencyRecord{WorkflowID: workflow, RequestHash: hash, CreatedAt: time.Now().UTC()})
	held, err := c.Claim(ctx, rk, rec)
	if err != nil {
		return "", fmt.Errorf("api: idempotency key: %w", err)
	}
	if held == nil {
		return "", nil
	}
	var got IdempotencyRecord
	if err := json.Unmarshal(held, &got); err != nil {
		return "", fmt.Errorf("api: idempotency key %q: unreadable record %q", key, held)
	}
	switch {
	case got.RequestHash != hash:
		return "", &KeyReusedError{Key: key, Workflow: got.WorkflowID}
	case got.WorkflowID == workflow:
		return "", nil
	}
	return got.WorkflowID, nil
}
