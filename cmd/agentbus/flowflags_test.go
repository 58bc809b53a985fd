package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/orchestrator"
)

func TestFlowFlags(t *testing.T) {
	for _, c := range []struct {
		weights, inFlight, rate string
		off                     bool
		want                    string // a fragment of the error, or "" for none
	}{
		{weights: "acme=3,beta=1"},
		{weights: "acme=3,acme=1", want: `tenant "acme" is named twice`},
		{weights: "acme", want: `"acme" is not tenant=weight`},
		{weights: "Acme=2", want: "tenant"},
		{weights: "acme=0", want: "from 1 to 1000"},
		{inFlight: "acme/search=4,beta/*=2", rate: "acme/search=2.5"},
		{inFlight: "acme/search=1.5", want: "whole number"},
		{rate: "acme/search=-1", want: "positive"},
		{rate: "acme=3", want: "tenant/capability=value"},
		{rate: "acme/Se.arch=3", want: "capability"},
		{inFlight: "acme/*=2", off: true, want: "need --flow-control"},
	} {
		f := planFlags{tenantWeights: c.weights, maxInFlight: c.inFlight, rateLimit: c.rate, flowControl: !c.off}
		_, werr := parseWeights(f.tenantWeights)
		limits, lerr := f.limits()
		err := werr
		if err == nil {
			err = lerr
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one saying %q", c, err, c.want)
		}
		if c.inFlight == "acme/search=4,beta/*=2" {
			want := orchestrator.Limit{MaxInFlight: 4, PerSecond: 2.5}
			if got := limits[orchestrator.LimitKey("acme", "search")]; got != want {
				t.Errorf("acme/search: %+v, want %+v", got, want)
			}
			if got := limits[orchestrator.LimitKey("beta", "*")]; got.MaxInFlight != 2 {
				t.Errorf("beta/*: %+v", got)
			}
		}
	}
}

func TestTokenLimitFlag(t *testing.T) {
	for _, c := range []struct {
		value string
		off   bool
		want  string // a fragment of the error, or "" for none
	}{
		{value: "acme/gpt-4o-mini=60000,beta/*=20000:5000,acme/meta-llama/Llama-3.1-8B=1000"},
		{value: "acme=60000", want: "tenant/model=tokens"},
		{value: "acme/=60000", want: "tenant/model=tokens"},
		{value: "Acme/m=1", want: "tenant"},
		{value: "acme/m=0", want: "positive number of tokens a minute"},
		{value: "acme/m=lots", want: "positive number of tokens a minute"},
		{value: "acme/m=10:-1", want: "burst"},
		{value: "acme/m=1,acme/m=2", want: "names acme/m twice"},
		{value: "acme/m=1", off: true, want: "needs --flow-control"},
	} {
		f := planFlags{tokenLimit: c.value, flowControl: !c.off}
		limits, err := f.tokenLimits()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.value, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one saying %q", c.value, err, c.want)
		}
		if c.want == "" {
			for k, want := range map[string]orchestrator.TokenLimit{
				"acme/gpt-4o-mini":             {PerMinute: 60000},
				"beta/*":                       {PerMinute: 20000, Burst: 5000},
				"acme/meta-llama/Llama-3.1-8B": {PerMinute: 1000},
			} {
				if got := limits[k]; got != want {
					t.Errorf("%s: %+v, want %+v", k, got, want)
				}
			}
		}
	}
}

// TestWeightsFromTokenTable: the token table's "weight" gives tenants
// their share, --tenant-weights overrides it, and a tenant whose tokens
// disagree is refused with the pointers of both.
func TestWeightsFromTokenTable(t *testing.T) {
	const list = `[{"token":"acme-client-token-0001","tenant":"acme","role":"client","weight":3},
		{"token":"acme-admin-token-00002","tenant":"acme","role":"admin"},
		{"token":"beta-client-token-0003","tenant":"beta","role":"client","weight":2}]`
	var tv tokensValue
	if err := tv.Set(list); err != nil || tv.err != nil {
		t.Fatal(err, tv.err)
	}
	f := planFlags{tokens: &tv, tenantWeights: "beta=5,gamma=2"}
	got, err := f.weights()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"acme": 3, "beta": 5, "gamma": 2}; !maps.Equal(got, want) {
		t.Errorf("weights %v, want %v", got, want)
	}
	const object = `{"acme-client-token-0001":{"tenant":"acme","role":"client","weight":4}}`
	if err := tv.Set(object); err != nil || tv.err != nil {
		t.Fatal(err, tv.err)
	}
	if got, _ := (&planFlags{tokens: &tv}).weights(); got["acme"] != 4 {
		t.Errorf("object form: weights %v, want acme 4", got)
	}
	for table, want := range map[string]string{
		`[{"token":"acme-client-token-0001","tenant":"acme","role":"client","weight":3},
		  {"token":"acme-admin-token-00002","tenant":"acme","role":"admin","weight":2}]`: "/1/weight: tenant acme has weight 2 here and 3 at /0/weight",
		`[{"token":"acme-client-token-0001","tenant":"acme","role":"client","weight":0}]`:    "/0/weight",
		`[{"token":"acme-client-token-0001","tenant":"acme","role":"client","weight":1001}]`: "/0/weight",
	} {
		_ = tv.Set(table)
		if tv.err == nil || !strings.Contains(tv.err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", table, tv.err, want)
		}
	}
}
