package kittest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentbus/agentbus/agents"
)

// Chunk is one artifact event a Recorder was given.
type Chunk struct {
	ID, Name string
	Data     any
	// Append and Last are the event's appendChunk and last flags.
	Append, Last bool
}

// Recorder is an agents.Emitter that keeps what it is given. A progress
// percent outside [0, 100] is refused with an error, as a step's events
// would be. Its zero value is ready; it is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	progress []string
	chunks   []Chunk
}

var _ agents.Emitter = (*Recorder)(nil)

// Progress records message.
func (r *Recorder) Progress(_ context.Context, percent float64, message string) error {
	if percent < 0 || percent > 100 {
		return fmt.Errorf("kittest: progress percent %v not in [0, 100]", percent)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, message)
	return nil
}

// Artifact records the artifact event.
func (r *Recorder) Artifact(_ context.Context, id, name string, data any, appendChunk, last bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, Chunk{ID: id, Name: name, Data: data, Append: appendChunk, Last: last})
	return nil
}

// Messages returns the progress messages so far, oldest first.
func (r *Recorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress)
}

// Said reports whether a progress message contains sub.
func (r *Recorder) Said(sub string) bool {
	return slices.ContainsFunc(r.Messages(), func(m string) bool { return strings.Contains(m, sub) })
}

// Chunks returns the artifact events so far, oldest first.
func (r *Recorder) Chunks() []Chunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.chunks)
}
