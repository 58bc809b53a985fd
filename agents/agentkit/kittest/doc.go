// Package kittest holds the test helpers the built-in agents share: a
// Recorder that stands in for the worker's agents.Emitter, a local
// ChatServer that speaks the OpenAI chat-completions protocol (so that an
// agent's LLM path runs against a real HTTP server and a real llm.Chat),
// and Run, which hands a request to an agent and checks and decodes its
// output.
//
// It is a normal package so that every agent's tests can import it, but
// only tests use it: nothing in a binary should.
package kittest
