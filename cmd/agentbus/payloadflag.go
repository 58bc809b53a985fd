package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/bus"
)

// payloadThreshold is --payload-threshold: a size in bytes with an
// optional KiB/MiB (or KB/MB, k/m: all binary) suffix, or "off" (-1):
// never offload.
type payloadThreshold int

func (p *payloadThreshold) String() string {
	switch n := int(*p); {
	case n < 0:
		return "off"
	case n%(1<<20) == 0 && n > 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0 && n > 0:
		return fmt.Sprintf("%dKiB", n>>10)
	default:
		return strconv.Itoa(n)
	}
}

func (p *payloadThreshold) Set(s string) error {
	v := strings.TrimSpace(strings.ToLower(s))
	if v == "off" || v == "-1" {
		*p = -1
		return nil
	}
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q: want a size such as 256KiB, 1MiB or 65536, or off", s)
	}
	*p = payloadThreshold(n * mult)
	return nil
}

func (p *payloadThreshold) Type() string { return "size" }

// defaultPayloadThreshold is the flag's default.
const defaultPayloadThreshold = payloadThreshold(bus.DefaultPayloadThreshold)
