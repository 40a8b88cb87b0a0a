package trace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// rows is a snapshot of a table of orders, one Delete button per row, with
// a heading and a search box above it.
func rows(ids ...string) *browser.Snapshot {
	els := []browser.Element{{Role: "heading", Name: "Orders", Level: 1}, {Role: "searchbox", Name: "Search"}}
	for _, id := range ids {
		els = append(els,
			browser.Element{Role: "link", Name: "Order " + id, Context: "row: Order " + id},
			browser.Element{Role: "button", Name: "Delete", Context: "row: Order " + id})
	}
	for i := range els {
		els[i].Ref = fmt.Sprintf("@e%d", i+1)
	}
	return &browser.Snapshot{ID: "s", Elements: els}
}

func TestAtRecordedRef(t *testing.T) {
	rec := rows("1001", "1002")
	del1002, err := Capture(rec, "@e6", browser.ElementDetails{}) // Delete of order 1002
	require.NoError(t, err)
	search, err := Capture(rec, "@e2", browser.ElementDetails{})
	require.NoError(t, err)

	twins := rows("1001", "1002")
	twins.Elements[3].Context, twins.Elements[5].Context = "", "" // two Delete buttons alike

	for _, tc := range []struct {
		name string
		fp   Fingerprint
		snap *browser.Snapshot
		want bool
	}{
		{"unchanged page", del1002, rows("1001", "1002"), true},
		{"unchanged page, a control without context", search, rows("1001", "1002"), true},
		{"a row inserted above: the ref names another row's button", del1002, rows("0999", "1001", "1002"), false},
		{"a row appended below: the neighbours changed", del1002, rows("1001", "1002", "1003"), false},
		{"the button renamed", del1002, func() *browser.Snapshot { s := rows("1001", "1002"); s.Elements[5].Name = "Remove"; return s }(), false},
		{"the ref is gone", del1002, rows("1001"), false},
		{"another element alike by role, name and context", search, func() *browser.Snapshot {
			s := rows("1001", "1002")
			s.Elements = append(s.Elements, browser.Element{Ref: "@e9", Role: "searchbox", Name: "Search"})
			return s
		}(), false},
		{"no recorded ref", Fingerprint{Role: "button", Name: "Delete"}, rows("1001", "1002"), false},
		{"no snapshot", del1002, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, AtRecordedRef(tc.fp, tc.snap))
		})
	}
	// Identical buttons without context: the one at the ref differs from
	// its twin only by position, so the ref alone does not decide.
	twin, err := Capture(twins, "@e6", browser.ElementDetails{})
	require.NoError(t, err)
	require.False(t, AtRecordedRef(twin, twins))
}
