package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/retrieval/ingest"
)

// uploadFile is one file index --url sends: its path on disk and its
// name (the document id), relative to the directory given as it is when
// indexing locally.
type uploadFile struct{ path, name string }

// uploadFiles lists the files under paths that a server can index (by
// extension); a path that cannot be read is a problem.
func uploadFiles(paths []string) ([]uploadFile, []ingest.Problem) {
	var files []uploadFile
	var problems []ingest.Problem
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			problems = append(problems, ingest.Problem{File: root, Reason: err.Error()})
			continue
		}
		if !info.IsDir() {
			files = append(files, uploadFile{path: root, name: filepath.ToSlash(filepath.Base(root))})
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				problems = append(problems, ingest.Problem{File: p, Reason: err.Error()})
				return nil
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || ingest.FormatOf(d.Name()) == "" {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, uploadFile{path: p, name: filepath.ToSlash(rel)})
			return nil
		})
		if err != nil {
			problems = append(problems, ingest.Problem{File: root, Reason: err.Error()})
		}
	}
	return files, problems
}

// indexRemote uploads the files to a running server (POST /v1/documents),
// follows the ingest workflow to its end and sums up its steps' outputs.
func indexRemote(ctx context.Context, c *client, files []uploadFile, progress io.Writer) (ingest.Summary, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range files {
			if err := writePart(mw, f); err != nil {
				_ = pw.CloseWithError(err)
				return
			}
		}
		_ = pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/documents", pr)
	if err != nil {
		return ingest.Summary{}, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(gateway.TenantHeader, c.tenant)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		_ = pr.CloseWithError(err)
		return ingest.Summary{}, fmt.Errorf("cannot reach agentbus at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return ingest.Summary{}, apiErr(resp)
	}
	var up gateway.DocumentsResponse
	if err := json.NewDecoder(resp.Body).Decode(&up); err != nil {
		return ingest.Summary{}, fmt.Errorf("the gateway's answer: %w", err)
	}
	fmt.Fprintf(progress, "uploaded %d files (%d bytes) as workflow %s\n", len(up.Files), up.Bytes, up.WorkflowID)
	last, err := c.follow(ctx, up.WorkflowID, 0, func(f events.Frame) error {
		if f.Type == "progress" {
			var p struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(f.Data, &p) == nil && p.Message != "" {
				fmt.Fprintf(progress, "  %s: %s\n", f.StepID, p.Message)
			}
		}
		return nil
	})
	if err != nil {
		return ingest.Summary{}, err
	}
	sum, err := ingestSummary(ctx, c, up.WorkflowID)
	if err == nil && last.Type != "complete" {
		err = fmt.Errorf("ingest workflow %s ended %s", up.WorkflowID, last.Type)
	}
	return sum, err
}

func writePart(mw *multipart.Writer, f uploadFile) error {
	src, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer src.Close()
	w, err := mw.CreateFormFile("file", f.name)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}

// ingestSummary sums up the outputs of an ingest workflow's steps.
func ingestSummary(ctx context.Context, c *client, workflow string) (ingest.Summary, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/workflows/"+workflow, nil)
	if err != nil {
		return ingest.Summary{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ingest.Summary{}, apiErr(resp)
	}
	var st struct {
		Tasks map[string]struct {
			Output struct {
				Files, Documents, Chunks int
				Problems                 []struct {
					File, Reason string
					Line         int
				}
			} `json:"output"`
		} `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return ingest.Summary{}, errors.New("the workflow's state: " + err.Error())
	}
	var sum ingest.Summary
	for _, t := range st.Tasks {
		sum.Files += t.Output.Files
		sum.Documents += t.Output.Documents
		sum.Chunks += t.Output.Chunks
		for _, p := range t.Output.Problems {
			sum.Errors = append(sum.Errors, ingest.Problem{File: p.File, Line: p.Line, Reason: p.Reason})
		}
	}
	return sum, nil
}
