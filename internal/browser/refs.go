package browser

import (
	"fmt"
	"sync"

	"github.com/go-rod/rod/lib/proto"
)

// Rect is a box in top-page CSS pixels (viewport coordinates).
type Rect struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// NodeRef is what a snapshot ref (@e0, @e1, ...) points at: the exact
// backend node the model saw, plus enough of its identity (role, name,
// context, box) to find an equivalent node when the page replaced it.
type NodeRef struct {
	Ref           string
	BackendNodeID proto.DOMBackendNodeID
	FrameID       proto.PageFrameID
	Role          string
	Name          string
	// Context is the element's compact surroundings (row, list item,
	// section, label) that tells identical controls apart.
	Context string
	Box     Rect
}

// ErrRefInvalid: a ref that is unknown, or from an older snapshot.
var ErrRefInvalid = fmt.Errorf("ref_invalid")

// refTable holds the refs of a page's latest snapshot. Refs are valid for
// that snapshot only.
type refTable struct {
	mu         sync.Mutex
	snapshotID string
	byRef      map[string]NodeRef
}

// storeRefs replaces the page's refs with those of snapshot id.
func (t *refTable) storeRefs(id string, refs []NodeRef) {
	m := make(map[string]NodeRef, len(refs))
	for _, r := range refs {
		m[r.Ref] = r
	}
	t.mu.Lock()
	t.snapshotID, t.byRef = id, m
	t.mu.Unlock()
}

// lookupRef returns the node of ref in the latest snapshot. When
// snapshotID is not empty it must name the latest snapshot. Errors wrap
// ErrRefInvalid.
func (t *refTable) lookupRef(snapshotID, ref string) (NodeRef, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRef == nil {
		return NodeRef{}, fmt.Errorf("%w: %s: no snapshot has been taken on this page", ErrRefInvalid, ref)
	}
	if snapshotID != "" && snapshotID != t.snapshotID {
		return NodeRef{}, fmt.Errorf("%w: %s belongs to snapshot %s, the latest is %s; take a new snapshot", ErrRefInvalid, ref, snapshotID, t.snapshotID)
	}
	r, ok := t.byRef[ref]
	if !ok {
		return NodeRef{}, fmt.Errorf("%w: %s is not in snapshot %s", ErrRefInvalid, ref, t.snapshotID)
	}
	return r, nil
}

// latestSnapshotID returns the ID of the page's latest snapshot, "" before
// the first.
func (t *refTable) latestSnapshotID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotID
}

// SnapshotID returns the ID of the page's latest snapshot ("" before the
// first); refs of that snapshot are the ones actions accept.
func (pg *Page) SnapshotID() string { return pg.refs.latestSnapshotID() }
