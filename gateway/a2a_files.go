package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/a2a"
	"github.com/agentbus/agentbus/sessions"
)

// Upload stores an A2A message's files and starts the workflow that
// indexes them in the tenant's index, as POST /v1/documents does (the
// same object store, quotas and ingest plan). A file the upload path
// refuses is an *a2a.FileError naming it.
func (h host) Upload(ctx context.Context, tenant string, files []a2a.File, meta map[string]any) (string, error) {
	g := h.g
	var size int64
	for _, f := range files {
		size += int64(len(f.Data))
	}
	quota, err := g.quotas.startUpload(ctx, tenant, size)
	if err != nil {
		return "", err
	}
	st := &uploadStore{g: g, tenant: tenant, upload: newWorkflowID()}
	for i, f := range files {
		if p, status := st.put(ctx, f.Name, "", bytes.NewReader(f.Data)); p != nil {
			st.discard()
			if status != http.StatusBadRequest {
				return "", errors.New("gateway: " + p.Message)
			}
			return "", &a2a.FileError{Index: i, Reason: p.Message}
		}
	}
	undo, err := g.quotas.admitUpload(tenant, quota, st.bytes)
	if err != nil {
		st.discard()
		return "", err
	}
	sub := events.WorkflowSubmitted{Query: ingestQuery(st.files), Plan: st.plan(g.cfg.Documents.FilesPerStep, meta), User: userOf(ctx),
		Metadata: map[string]string{"kind": "ingest", "upload": st.upload, "files": strconv.Itoa(len(st.files)), "interface": "a2a"}}
	resp, err := g.store(ctx, tenant, "", "", sub)
	if err != nil {
		undo()
		st.discard()
		return "", err
	}
	return resp.WorkflowID, nil
}

// SeedSession gives the request's user's session id the turns, oldest
// first, when it has none yet: a conversation the client kept itself
// becomes the session's history. A session with turns keeps its own,
// and the turns given are left out (it reports false).
func (h host) SeedSession(ctx context.Context, tenant, id string, turns []events.Turn) (bool, error) {
	user := userOf(ctx)
	sess, err := h.g.sessions.Load(ctx, tenant, user, id)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
	case err != nil:
		return false, err
	case len(sess.Turns) > 0 || sess.Dropped > 0:
		return false, nil
	}
	for _, t := range turns {
		if _, err := h.g.sessions.Append(ctx, tenant, user, id, t); err != nil {
			return false, err
		}
	}
	return true, nil
}
