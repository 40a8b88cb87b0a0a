package browser

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefTable(t *testing.T) {
	t.Parallel()
	var tab refTable
	_, err := tab.lookupRef("", "@e0")
	require.ErrorIs(t, err, ErrRefInvalid, "no snapshot yet")
	require.Empty(t, tab.latestSnapshotID())

	tab.storeRefs("s1", []NodeRef{{Ref: "@e0", BackendNodeID: 7, Role: "button", Name: "Save"}})
	got, err := tab.lookupRef("", "@e0")
	require.NoError(t, err)
	require.Equal(t, "Save", got.Name)
	got, err = tab.lookupRef("s1", "@e0")
	require.NoError(t, err)
	require.EqualValues(t, 7, got.BackendNodeID)

	tab.storeRefs("s2", []NodeRef{{Ref: "@e0", BackendNodeID: 9}})
	_, err = tab.lookupRef("s1", "@e0")
	require.True(t, errors.Is(err, ErrRefInvalid), "a ref of an older snapshot is invalid")
	_, err = tab.lookupRef("", "@e5")
	require.ErrorIs(t, err, ErrRefInvalid)
	require.Equal(t, "s2", tab.latestSnapshotID())
}
