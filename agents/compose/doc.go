// Package compose is the built-in answer composer: one agent serving two
// capabilities, "summarize" (a short cited answer) and "detailed_report"
// (Overview, Findings per source, Sources).
//
// Data enters as the step's input ({"query", "max_sentences"}) and the
// outputs of the steps it depends on: the search step's hits; when the
// web graph ran beside it, the documents its select step kept, which are
// interleaved with the hits and cited with their URLs (a citation's "url",
// and a "Web sources" list under a summary); and, when a memory step ran,
// the facts the user told earlier, which the answer mentions. By default the answer is extractive: the hits are cut into
// sentences, scored by query-term overlap (BM25 over the hit set's
// sentences) plus their position, and picked with MMR redundancy removal;
// each sentence is followed by a citation [n] of the chunk it came from.
// With an LLM configured, the model answers from the numbered passages
// and every [n] it cites is checked; an answer citing a passage that does
// not exist (or none) falls back to the extractive answer, and says so.
// Data leaves as the step's output (schema "agent.<capability>.output")
// and as the answer streamed in artifact chunks while it is composed.
package compose
