package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentbus/agentbus/events"
)

// PayloadRef locates a step's input, output or artifact data that was
// too large to travel in a message (above the workers' payload
// threshold, 256 KiB by default): such data stands in state, results and
// event frames as {"$agentbus_ref": {…}} (events.PayloadRef). Resolve and
// OpenPayload fetch it.
type PayloadRef = events.PayloadRef

// ErrPayload is matched by the error of a payload that cannot be read:
// gone (its workflow purged), another tenant's, or not what its
// reference says (size or SHA-256).
var ErrPayload = errors.New("client: payload unavailable")

// ParseRef tells whether raw is a payload reference and returns it.
func ParseRef(raw json.RawMessage) (PayloadRef, bool) {
	ref, ok, err := events.ParseRef(raw)
	return ref, ok && err == nil
}

// OpenPayload streams the payload ref names: from the gateway
// (GET /v1/workflows/{id}/payloads/{key}) or, for a NATS client, from the
// object store. The caller closes it; the bytes are not checked against
// the reference (Resolve checks them).
func (c *Client) OpenPayload(ctx context.Context, ref PayloadRef) (io.ReadCloser, error) {
	if c.nc != nil {
		p, err := c.nc.b.OpenPayload(ctx, c.nc.tenant, ref)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPayload, err)
		}
		return p, nil
	}
	parts := strings.SplitN(ref.Key, "/", 3)
	if len(parts) != 3 || parts[0] != c.cfg.Tenant {
		return nil, fmt.Errorf("%w: %s is not tenant %s's", ErrPayload, ref, c.cfg.Tenant)
	}
	path := "/v1/workflows/" + url.PathEscape(parts[1]) + "/payloads/"
	for i, seg := range strings.Split(parts[2], "/") {
		if i > 0 {
			path += "/"
		}
		path += url.PathEscape(seg)
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrPayload, ref, ReadError(resp))
	}
	return resp.Body, nil
}

// Resolve returns raw with its payload references replaced by their
// payloads: raw itself when it is one, and each member of an object
// that is one (a result of several sink steps). A value without a
// reference comes back unchanged, at the cost of a substring search.
// Every payload is checked against its reference's size and SHA-256.
func (c *Client) Resolve(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if !events.MentionsRef(raw) {
		return raw, nil
	}
	if ref, ok, err := events.ParseRef(raw); err != nil || ok {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPayload, err)
		}
		return c.fetch(ctx, ref)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return raw, nil // not an object: a reference only in a string
	}
	changed := false
	for k, v := range members {
		ref, ok, err := events.ParseRef(v)
		if err != nil {
			return nil, fmt.Errorf("%w: member %q: %w", ErrPayload, k, err)
		}
		if !ok {
			continue
		}
		if members[k], err = c.fetch(ctx, ref); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return raw, nil
	}
	out, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return out, nil
}

// ResolveResult resolves the references in a result and in each step's
// output (Resolve).
func (c *Client) ResolveResult(ctx context.Context, r Result) (Result, error) {
	var err error
	if r.Result, err = c.Resolve(ctx, r.Result); err != nil {
		return r, fmt.Errorf("result: %w", err)
	}
	if len(r.Outputs) > 0 {
		outs := make(map[string]json.RawMessage, len(r.Outputs))
		for id, o := range r.Outputs {
			if outs[id], err = c.Resolve(ctx, o); err != nil {
				return r, fmt.Errorf("output of %s: %w", id, err)
			}
		}
		r.Outputs = outs
	}
	return r, nil
}

// fetch reads the payload ref names and checks it.
func (c *Client) fetch(ctx context.Context, ref PayloadRef) (json.RawMessage, error) {
	rc, err := c.OpenPayload(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, min(max(ref.Size, 0), 64<<20)))
	if _, err := io.Copy(buf, rc); err != nil {
		return nil, fmt.Errorf("client: reading payload %s: %w", ref, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if int64(buf.Len()) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: %s: read %d bytes with another SHA-256", ErrPayload, ref, buf.Len())
	}
	return buf.Bytes(), nil
}
