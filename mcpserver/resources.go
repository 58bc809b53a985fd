package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// URI prefix and templates of the resources.
const (
	workflowPrefix = "agentbus://workflows/"
	// StateTemplate is a workflow's state: its checkpoint, as GET
	// /v1/workflows/{id} answers it.
	StateTemplate = workflowPrefix + "{id}"
	// AnswerTemplate is a completed workflow's answer: the result its
	// complete event carried.
	AnswerTemplate = workflowPrefix + "{id}/answer"
)

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "workflow", Title: "Workflow state", URITemplate: StateTemplate, MIMEType: "application/json",
		Description: "A workflow's state: status, phase, plan, each step's state and output, result or error."}, s.readState)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "answer", Title: "Workflow answer", URITemplate: AnswerTemplate, MIMEType: "application/json",
		Description: "A completed workflow's result: its sink step's output (several sinks: their outputs by step id)."}, s.readAnswer)
}

// workflowOf is the id in a resource URI and whether it names the answer.
func workflowOf(uri string) (id string, answer bool, ok bool) {
	rest, found := strings.CutPrefix(uri, workflowPrefix)
	if !found {
		return "", false, false
	}
	if id, found = strings.CutSuffix(rest, "/answer"); found {
		answer = true
	} else {
		id = rest
	}
	return id, answer, id != "" && !strings.Contains(id, "/")
}

func (s *server) readState(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.read(ctx, req, false)
}

func (s *server) readAnswer(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.read(ctx, req, true)
}

func (s *server) read(ctx context.Context, req *mcp.ReadResourceRequest, answer bool) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, isAnswer, ok := workflowOf(uri)
	if !ok || isAnswer != answer {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c, err := s.gateway(ctx, req.Extra)
	if err != nil {
		return nil, err
	}
	st, err := c.State(ctx, id)
	if errors.Is(err, client.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("reading workflow %s: %w", id, err)
	}
	var body []byte
	if answer {
		if st.Status != events.StateCompleted {
			return nil, noAnswer(st)
		}
		body = st.Result
	} else if body, err = json.MarshalIndent(st, "", "  "); err != nil {
		return nil, fmt.Errorf("reading workflow %s: %w", id, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

// noAnswer says why a workflow that did not complete has no answer.
func noAnswer(st client.State) error {
	if !st.Status.Terminal() {
		return fmt.Errorf("workflow %s has no answer yet: it is %s (%s); the follow tool waits for its end", st.WorkflowID, st.Status, st.Phase)
	}
	msg := fmt.Sprintf("workflow %s has no answer: it ended %s", st.WorkflowID, st.Status)
	if st.Error != nil {
		msg += ": " + st.Error.Code + ": " + st.Error.Message
	}
	return errors.New(msg)
}
