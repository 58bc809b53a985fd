package schedule_test

import (
	"errors"

	"github.com/agentbus/agentbus/schemas"
)

func pointers(err error) []string {
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) {
		return []string{"not a ValidationError: " + err.Error()}
	}
	out := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		out[i] = p.Pointer
	}
	return out
}
