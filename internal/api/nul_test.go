package api

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

func TestCheckNUL(t *testing.T) {
	t.Parallel()
	data, err := structpb.NewStruct(map[string]any{"nested": map[string]any{"k": "a\x00b"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		msg   *wfv1.CreateRunRequest
		field string // "" for a request that passes
	}{
		{"clean", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{Goal: "Find the price", Labels: map[string]string{"a": "b"}}}, ""},
		{"goal", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{Goal: "a\x00b"}}, "params.goal"},
		{"request id", &wfv1.CreateRunRequest{RequestId: "r\x00"}, "request_id"},
		{"list element", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{AllowedDomains: []string{"ok.example", "x\x00"}}}, "params.allowed_domains[1]"},
		{"map value", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{Labels: map[string]string{"team": "a\x00"}}}, `params.labels["team"]`},
		{"map key", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{Labels: map[string]string{"t\x00": "a"}}}, "params.labels"},
		{"struct value", &wfv1.CreateRunRequest{Params: &wfv1.RunParams{Tools: []*wfv1.ToolDefinition{{Name: "t", InputSchema: data}}}},
			"params.tools[0].input_schema.fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNUL(tc.msg)
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, codes.InvalidArgument, codeOf(err), "%v", err)
			require.Contains(t, err.Error(), tc.field)
			require.NotContains(t, err.Error(), "\x00", "the error does not echo the value")
		})
	}
}
