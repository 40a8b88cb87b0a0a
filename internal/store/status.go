package store

import (
	"fmt"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

var errNotFound = fault.ErrNotFound

// statusNames maps API statuses to their stored form.
var statusNames = map[wfv1.RunStatus]string{
	wfv1.RunStatus_RUN_STATUS_QUEUED:            "queued",
	wfv1.RunStatus_RUN_STATUS_RUNNING:           "running",
	wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL: "awaiting_approval",
	wfv1.RunStatus_RUN_STATUS_COMPLETED:         "completed",
	wfv1.RunStatus_RUN_STATUS_FAILED:            "failed",
	wfv1.RunStatus_RUN_STATUS_MAX_STEPS_REACHED: "max_steps_reached",
	wfv1.RunStatus_RUN_STATUS_ERROR:             "error",
	wfv1.RunStatus_RUN_STATUS_CANCELLED:         "cancelled",
}

var statusValues = func() map[string]wfv1.RunStatus {
	m := make(map[string]wfv1.RunStatus, len(statusNames))
	for k, v := range statusNames {
		m[v] = k
	}
	return m
}()

// liveStatuses are the stored names of the non-terminal statuses.
var liveStatuses = []string{"queued", "running", "awaiting_approval"}

// IsTerminal reports whether a run in status s has finished for good.
func IsTerminal(s wfv1.RunStatus) bool {
	switch s {
	case wfv1.RunStatus_RUN_STATUS_QUEUED, wfv1.RunStatus_RUN_STATUS_RUNNING,
		wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, wfv1.RunStatus_RUN_STATUS_UNSPECIFIED:
		return false
	}
	return true
}

func statusName(s wfv1.RunStatus) (string, error) {
	name, ok := statusNames[s]
	if !ok {
		return "", fmt.Errorf("run status %v has no stored form", s)
	}
	return name, nil
}

func parseStatus(name string) (wfv1.RunStatus, error) {
	s, ok := statusValues[name]
	if !ok {
		return 0, fmt.Errorf("unknown stored run status %q", name)
	}
	return s, nil
}
