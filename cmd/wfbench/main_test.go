package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSelectPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		list    string
		want    []string
		wantErr bool
	}{
		{"", []string{"form", "table", "many", "shadow", "iframes", "article"}, false},
		{"table, form", []string{"table", "form"}, false},
		{"form,nope", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			t.Parallel()
			pages, err := selectPages(tt.list)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, p := range pages {
				names = append(names, p.Name)
			}
			require.Equal(t, tt.want, names)
		})
	}
}

func TestRunRejectsBadArguments(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, run([]string{"extra"}), "unexpected arguments")
	require.ErrorContains(t, run([]string{"-pages", "nope"}), `no page "nope"`)
}
