package api

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// gatewayJSON decodes request bodies as the REST gateway does
// (internal/server/http.go): unknown fields are an error.
var gatewayJSON = protojson.UnmarshalOptions{DiscardUnknown: false}

// requireClassified fails unless err is nil or a RequestError of a fault
// kind the API maps to a 4xx or UNIMPLEMENTED status, with at least one
// named field.
func requireClassified(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var re *fault.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("unclassified error %T: %v", err, err)
	}
	if !errors.Is(err, fault.ErrInvalidArgument) && !errors.Is(err, fault.ErrUnimplemented) {
		t.Fatalf("error of kind %v: %v", re.Kind, err)
	}
	if len(re.Violations) == 0 {
		t.Fatalf("request error without a field: %v", err)
	}
	for _, v := range re.Violations {
		if v.Field == "" || v.Description == "" {
			t.Fatalf("violation without a field or description: %+v", v)
		}
	}
}

// runParamsSeeds are request bodies (RunParams as JSON) for the corpora.
var runParamsSeeds = []string{
	`{"goal":"Check the price","start_url":"https://example.com/"}`,
	`{"goal":"x","start_url":"https://example.com","max_steps":-3}`,
	`{"goal":"x","start_url":"javascript:alert(1)"}`,
	`{"goal":"x","start_url":"http://[::1"}`,
	`{"goal":"x","start_url":"https://example.com","headless":false}`,
	`{"goal":"x","start_url":"https://example.com","allowed_domains":["*.example.com","https://x.com/"],"blocked_domains":[""]}`,
	`{"goal":"x","start_url":"https://example.com","browser":{"viewport":{"width":100000,"height":-1},"navigation_timeout":"0s","run_timeout":"99999h","locale":"xx_@@","timezone":"Mars/Base"}}`,
	`{"goal":"x","start_url":"https://example.com","labels":{"Team":"qa","":"x"},"screenshot_history_depth":-1,"min_confidence":2}`,
	`{"goal":"x","start_url":"https://example.com","controller":{"provider":"steps","temperature":3,"prompt_ref":"checkout@2"},"judge":{"strategy":"JUDGE_STRATEGY_LLM"}}`,
	`{"goal":"x","start_url":"https://example.com","replay":{"mode":"REPLAY_MODE_STRICT"},"max_cost_usd":-1,"max_tokens":-5,"actions_per_turn":100}`,
	`{"goal":"x","start_url":"https://example.com","auth":{},"governance":{},"approval":{},"completion":{},"webhook":{"url":"ftp://x"},"checkpoints":[{}],"tools":[{}],"prompt_runner":{}}`,
	`{"goal":"` + strings.Repeat("long ", 3000) + `","start_url":"https://example.com"}`,
	`{}`, `null`, `[]`, `{"goal":`, "{\"goal\":\"\xff\"}",
}

// FuzzValidateParams decodes RunParams from JSON (as the REST gateway
// does) and from the protobuf wire format (as gRPC does), and validates
// them: nothing panics, every rejection is a classified RequestError, and
// what validation accepts (with its defaults filled in) is accepted again
// unchanged and encodes as JSON.
func FuzzValidateParams(f *testing.F) {
	for _, s := range runParamsSeeds {
		f.Add([]byte(s))
		var p wfv1.RunParams
		if gatewayJSON.Unmarshal([]byte(s), &p) == nil {
			if b, err := proto.Marshal(&p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, decode := range []func([]byte, *wfv1.RunParams) error{
			func(b []byte, p *wfv1.RunParams) error { return gatewayJSON.Unmarshal(b, p) },
			func(b []byte, p *wfv1.RunParams) error { return proto.Unmarshal(b, p) },
		} {
			var p wfv1.RunParams
			if decode(data, &p) != nil {
				continue // a decoding error: the gateway's 400, gRPC's INVALID_ARGUMENT
			}
			out, err := validateParams(&p, 10*time.Minute)
			requireClassified(t, err)
			if err != nil {
				continue
			}
			again, err := validateParams(out, 10*time.Minute)
			if err != nil {
				t.Fatalf("validated params do not validate again: %v\n%v", err, out)
			}
			if !proto.Equal(out, again) {
				t.Fatalf("validation is not idempotent:\n%v\n%v", out, again)
			}
			if _, err := protojson.Marshal(out); err != nil {
				t.Fatalf("validated params do not encode: %v", err)
			}
		}
	})
}

// FuzzFlatParams merges flat key/value parameters (the MCP and RunAndWait
// form) into a request: nothing panics, a rejection is INVALID_ARGUMENT
// naming flat_params.<key>, and the merged params validate to nil or a
// classified error.
func FuzzFlatParams(f *testing.F) {
	for _, key := range FlatParamKeys() {
		f.Add(key, "", "goal", "Check the page")
		f.Add(key, "1", "start_url", "https://example.com/")
		f.Add(key, "-1", key, "yes")
		f.Add(key, "1e400", "max_steps", "12")
	}
	f.Add("viewport", "1024x768", "run_timeout", "120")
	f.Add("viewport", "0x-1", "timeout", "90s")
	f.Add("labels", "team=qa, ci = 1", "allowed_domains", "example.com, *.example.com,,")
	f.Add("headless", "no", "min_confidence", "NaN")
	f.Add("bogus", "1", "max_cost_usd", "Inf")
	f.Add("run_timeout", "9223372036854775807", "timeout", "-5s")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		req := &wfv1.RunAndWaitRequest{FlatParams: map[string]string{k1: v1, k2: v2}}
		out, err := withFlatParams(req)
		requireClassified(t, err)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalidArgument) {
				t.Fatalf("flat params rejected as %v", err)
			}
			var re *fault.RequestError
			errors.As(err, &re)
			for _, v := range re.Violations {
				if !strings.HasPrefix(v.Field, "flat_params.") {
					t.Fatalf("violation outside flat_params: %+v", v)
				}
			}
			return
		}
		if out.FlatParams != nil {
			t.Fatalf("flat params left in the merged request: %v", out.FlatParams)
		}
		if _, ok := req.FlatParams[k1]; !ok {
			t.Fatal("the caller's request was modified")
		}
		if out.Params != nil {
			_, err := validateParams(out.Params, 10*time.Minute)
			requireClassified(t, err)
		}
	})
}
