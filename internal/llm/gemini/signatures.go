package gemini

import "sync"

// maxSignatures bounds the thought signatures one model keeps.
const maxSignatures = 4096

// signatures keeps the thought signatures of recent tool calls by call ID,
// so that a call sent back to Gemini carries the signature it came with.
// The oldest are forgotten first. It is safe for concurrent use.
type signatures struct {
	mu    sync.Mutex
	max   int
	byID  map[string][]byte
	order []string
}

func newSignatures(max int) *signatures {
	return &signatures{max: max, byID: make(map[string][]byte)}
}

func (s *signatures) put(id string, sig []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[id]; !ok {
		s.order = append(s.order, id)
	}
	s.byID[id] = sig
	for len(s.order) > s.max {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
}

// get returns the signature of call id, nil when it is not known.
func (s *signatures) get(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}
