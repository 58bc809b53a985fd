package client_test

import "github.com/agentbus/agentbus/bus"

type busRecord = bus.Record

var errStop = bus.ErrStop
