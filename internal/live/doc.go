// Package live is the live view and takeover of running runs: a person
// watches a run's browser as it works (CDP screencast frames) and can take
// the browser from the model between steps, drive it with mouse and
// keyboard, and hand it back; what they did is recorded as a step by a
// human.
//
// A Session lives in the worker that executes a run. It implements
// runner.Takeover: the runner tells it the run's page (PageChanged) and
// asks it between steps whether a person wants the browser (Pause). A
// takeover goes REQUESTED → ACTIVE → ENDED. Request opens one; it becomes
// ACTIVE at the runner's next safe point: at once when the runner is idle
// (inside Pause, or between Idle and resume, as during an approval wait),
// else when the runner next calls Pause. While it is ACTIVE, Input passes
// the person's mouse and keyboard to the page in order and records their
// gestures (clicks name their element by role and accessible name; typing
// says how many characters went where, never what they were); Pause
// returns the turn when they hand the browser back (HandBack), leave it
// idle for IdleTimeout, or the run ends (Close). Handing back a REQUESTED
// takeover withdraws it. Every state change is told to OnChange, in order.
//
// Subscribe streams the run's page: the Session runs a screencast of the
// current page while it has subscribers and fans frames out through
// one-frame channels where the newest frame wins, so a slow viewer skips
// frames and never slows the run or other viewers.
//
// A Relay connects a Session to the database, where the API replicas write
// takeovers and input and read frames (see relay.go); the Registry lets a
// viewer on the worker's own replica read frames straight from the
// Session.
package live
