package subjects_test

import (
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/subjects"
)

func ExampleStep() {
	s, err := subjects.Step("acme", "web-search")
	if err != nil {
		panic(err)
	}
	fmt.Println(s)

	// A wildcard can never reach a subject.
	_, err = subjects.Step("acme", "*")
	var te *subjects.TokenError
	fmt.Println(errors.Is(err, subjects.ErrInvalidToken), errors.As(err, &te), te.Field)
	// Output:
	// agentbus.acme.step.web-search
	// true true capability
}

func ExampleEvents() {
	s, err := subjects.Events("acme", "wf-42")
	if err != nil {
		panic(err)
	}
	fmt.Println(s)

	p, err := subjects.Parse(s)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", p)

	_, err = subjects.Events("acme.other", "wf-42")
	fmt.Println(err)
	// Output:
	// agentbus.acme.events.wf-42
	// {Tenant:acme Kind:events Last:wf-42}
	// subjects: tenant id "acme.other" is not a single token matching ^[a-z0-9][a-z0-9_-]{0,62}$
}
