package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/klauspost/compress/zstd"
)

func main() {
	id := flag.Uint("id", 0, "the dictionary id (1 and up)")
	in := flag.String("in", "", "the content file")
	out := flag.String("out", "", "the dictionary file to write")
	flag.Parse()
	if err := run(uint32(*id), *in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkdict:", err)
		os.Exit(1)
	}
}

func run(id uint32, in, out string) error {
	if id == 0 || in == "" || out == "" {
		return fmt.Errorf("want -id N (N ≥ 1), -in and -out")
	}
	hist, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	// Samples: the content as it is, and with its ids and states varied,
	// as the revisions of other workflows would be.
	var samples [][]byte
	for _, r := range [][2]string{{"", ""}, {"search", "lookup"}, {"working", "completed"}, {"acme", "default"}, {"wf-1", "d2f1c0de-77aa-4bb1-9c3e-0123456789ab"}} {
		samples = append(samples, bytes.ReplaceAll(hist, []byte(r[0]), []byte(r[1])))
	}
	samples[0] = hist
	d, err := zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: samples, History: hist, Offsets: [3]int{1, 4, 8}, Level: zstd.SpeedFastest, CompatV155: true})
	if err != nil {
		return err
	}
	return os.WriteFile(out, d, 0o644)
}
