package mcpserver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// A session's key is readable in its run's params, so another run that
// names it must not get the session's model: a session serves only the
// run it was opened for, whichever of the worker and openSession gets
// there first.
func TestSessionServesOneRun(t *testing.T) {
	t.Parallel()
	// A step is openSession's bind of a run, or a model built for a run
	// by a worker (for no run: CreateRun's validation), and whether it may.
	type step struct {
		op, run string
		ok      bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"openSession binds first", []step{{"model", "", true}, {"bind", "run-a", true}, {"model", "run-a", true}, {"model", "run-b", false}}},
		{"the worker builds first", []step{{"model", "run-a", true}, {"bind", "run-a", true}, {"model", "run-a", true}}},
		{"another run names the key first", []step{{"model", "run-b", true}, {"bind", "run-a", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ss := NewSessions(0)
			sess, err := ss.open("tenant-1")
			require.NoError(t, err)
			for i, st := range tc.steps {
				switch st.op {
				case "bind":
					err = ss.bind(sess, st.run)
				case "model":
					_, err = ss.Model(llm.Settings{Provider: Provider, Model: sess.key, RunID: st.run})
				}
				if st.ok {
					require.NoError(t, err, "step %d %s %s", i, st.op, st.run)
				} else {
					require.ErrorIs(t, err, errOtherRun, "step %d %s %s", i, st.op, st.run)
				}
			}
		})
	}
}

// One tenant cannot hold every session of a replica.
func TestSessionsPerTenantLimit(t *testing.T) {
	t.Parallel()
	ss := NewSessions(0)
	for range maxTenantSessions {
		_, err := ss.open("greedy")
		require.NoError(t, err)
	}
	_, err := ss.open("greedy")
	require.ErrorIs(t, err, errTenantSessionsFull)
	_, err = ss.open("other")
	require.NoError(t, err, "another tenant still opens sessions")
}
