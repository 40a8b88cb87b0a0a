package live

import "sync"

// Registry holds the live Sessions of the runs this process executes, by
// run ID, so that a viewer on the same replica reads frames straight from
// the Session instead of through the database. Relays add and remove their
// Sessions. It is safe for concurrent use; one Registry serves a process.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*Session
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{sessions: make(map[string]*Session)}
}

// Get returns the Session of run runID, nil when this process does not
// hold the run (or r is nil).
func (r *Registry) Get(runID string) *Session {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[runID]
}

func (r *Registry) add(runID string, s *Session) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[runID] = s
}

// remove forgets s; a newer Session of the same run stays.
func (r *Registry) remove(runID string, s *Session) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[runID] == s {
		delete(r.sessions, runID)
	}
}
