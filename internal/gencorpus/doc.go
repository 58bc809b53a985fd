// Command gencorpus regenerates agentbus's sample corpus, corpus/godoc.jsonl:
// one document per Go standard library package (the package's doc
// comment, then each exported function, type and method with its
// signature and doc comment, as Markdown), extracted with go/doc from
// $(go env GOROOT)/src. Packages under internal, vendor, cmd and testdata
// are skipped. It also copies the Go LICENSE next to it.
//
// Run it from the repository root:
//
//	go run ./internal/gencorpus            # writes corpus/godoc.jsonl and corpus/LICENSE-go
//	go run ./internal/gencorpus -out DIR -goroot DIR -max-bytes 24000
//
// The output depends only on the Go tree read, so two runs on the same Go
// version give the same file.
package main
