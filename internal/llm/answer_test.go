package llm_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestToolAnswer(t *testing.T) {
	type answer struct {
		Score *float64 `json:"score"`
	}
	parse := func(raw []byte) (float64, error) {
		var a answer
		if err := json.Unmarshal(raw, &a); err != nil {
			return 0, err
		}
		if a.Score == nil {
			return 0, errors.New("score is required")
		}
		return *a.Score, nil
	}
	call := func(name, args string) llm.ToolCall {
		return llm.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)}
	}
	cases := []struct {
		name    string
		resp    *llm.Response
		want    float64
		wantErr string
	}{
		{name: "tool call", resp: &llm.Response{ToolCalls: []llm.ToolCall{call("grade", `{"score": 0.5}`)}}, want: 0.5},
		{name: "second call parses", resp: &llm.Response{ToolCalls: []llm.ToolCall{call("grade", `{}`), call("grade", `{"score": 1}`)}}, want: 1},
		{name: "fenced text", resp: &llm.Response{Text: "Here:\n```json\n{\"score\": 0.25}\n```"}, want: 0.25},
		{name: "object in prose", resp: &llm.Response{Text: `I think {"score": 0.75} fits.`}, want: 0.75},
		{name: "bad arguments", resp: &llm.Response{ToolCalls: []llm.ToolCall{call("grade", `{}`)}}, wantErr: "grade arguments: score is required"},
		{name: "other tool", resp: &llm.Response{ToolCalls: []llm.ToolCall{call("click", `{}`)}}, wantErr: "called click instead of grade"},
		{name: "empty", resp: &llm.Response{Text: "  "}, wantErr: "empty answer"},
		{name: "prose only", resp: &llm.Response{Text: "looks fine"}, wantErr: "no grade call and no answer object in the text"},
		{name: "nil", resp: nil, wantErr: "no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := llm.ToolAnswer(c.resp, "grade", parse)
			if c.wantErr != "" {
				require.EqualError(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.InDelta(t, c.want, got, 1e-9)
		})
	}
}

func TestDecodeArgs(t *testing.T) {
	type args struct {
		Score *float64 `json:"score"`
	}
	cases := []struct {
		name    string
		raw     string
		want    float64
		wantErr string
	}{
		{name: "object", raw: `{"score": 0.5}`, want: 0.5},
		{name: "string-encoded", raw: `"{\"score\": 0.25}"`, want: 0.25},
		{name: "under arguments", raw: `{"name": "grade", "arguments": {"score": 1}}`, want: 1},
		{name: "under the tool's name", raw: `{"grade": {"score": 0.75}}`, want: 0.75},
		{name: "missing", raw: `{"reason": "x"}`, wantErr: `"score" is missing`},
		{name: "not an object", raw: `[1]`, wantErr: "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var a args
			err := llm.DecodeArgs([]byte(c.raw), "grade", "score", &a)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, a.Score)
			require.InDelta(t, c.want, *a.Score, 1e-9)
		})
	}
}
