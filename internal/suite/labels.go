package suite

// Labels a suite run puts on the runs of its tests' attempts, so ListRuns
// finds them by label; a test's own params may not set them.
const (
	// LabelSuiteRun is the suite run's ID.
	LabelSuiteRun = "suite_run"
	// LabelTest is the test's name.
	LabelTest = "test"
)
