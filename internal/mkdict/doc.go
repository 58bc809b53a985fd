// Command mkdict builds the checkpoint dictionary workflow/codec.go
// compresses with, in the zstd dictionary format (RFC 8878, 5), from its
// content file: the content is the dictionary's history, and variations
// of it train its entropy tables. Run once per new dictionary id (go
// generate ./workflow); a released dictionary is never rebuilt.
//
//	go run ./internal/mkdict -id 1 -in workflow/checkpoint_dict_v1.json -out workflow/checkpoint_v1.zdict
package main
