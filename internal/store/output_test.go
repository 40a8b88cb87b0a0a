package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
)

// Run.output is stored by FinishRun and read back by every read of the run:
// the finished run, GetRun, ListRuns and the FINISHED event.
func TestRunOutput(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	value := func(v any) *structpb.Value {
		pv, err := structpb.NewValue(v)
		require.NoError(t, err)
		return pv
	}
	tests := []struct {
		name   string
		output *structpb.Value
	}{
		{"none", nil},
		{"an object", value(map[string]any{"total": 12.5, "items": []any{"a", map[string]any{"b": true}, nil}, "name": "Zoë \u2028 <x>"})},
		{"extracted rows", value([]any{map[string]any{"name": "Apple", "price": "1.20"}, map[string]any{"name": "Pear", "price": "0.80"}})},
		{"a string", value("done")},
		{"a number", value(42.0)},
		{"false", value(false)},
		{"an empty list", value([]any{})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
			require.Nil(t, startRun(t, s, id).Output)
			run, err := s.FinishRun(t.Context(), id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED, Output: tc.output})
			require.NoError(t, err)
			require.True(t, proto.Equal(tc.output, run.Output), "%v != %v", tc.output, run.Output)
			require.True(t, proto.Equal(run, getRun(t, s, id)))

			runs, _, err := s.ListRuns(t.Context(), store.ListRunsFilter{PageSize: 1000})
			require.NoError(t, err)
			found := false
			for _, r := range runs {
				if r.Id == id {
					found = true
					require.True(t, proto.Equal(tc.output, r.Output))
				}
			}
			require.True(t, found)
			evs := listEvents(t, s, id)
			last := evs[len(evs)-1]
			require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, last.Type)
			require.True(t, proto.Equal(tc.output, last.GetRun().GetOutput()))

			// A terminal run's output never changes.
			again, err := s.FinishRun(t.Context(), id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR, Output: value("late")})
			require.NoError(t, err)
			require.True(t, proto.Equal(tc.output, again.Output))
		})
	}
}
