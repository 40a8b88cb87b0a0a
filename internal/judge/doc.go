// Package judge decides, step by step, whether a browser agent's goal is met,
// cannot be met, or needs a nudge. The runner asks a Judge after the steps a
// Frequency selects and whenever the agent claims to be finished
// (complete_task); the Verdict ends the run (Done, Failed) or feeds advice
// back to the controller (Feedback, SuggestedNextAction).
//
// Three judges share the Judge interface:
//
//   - Heuristic costs nothing: it spots a page that no longer changes, a
//     navigation loop and the same error over and over, and gives up after
//     FailAfter steps of that. It accepts an agent's "failed" claim (the
//     agent's own judgment that the goal cannot be met is final) and
//     rejects a "success" claim the evidence contradicts.
//   - LLM asks a model, showing it the goal, a compact step history, the
//     page text (fenced as untrusted data) and the screenshots, and reads
//     a structured verdict from a submit_verdict tool call.
//   - Hybrid, the default, runs the heuristics first and asks the model
//     only when they are not conclusive.
//
// The package knows nothing about browsers, runs or storage: the runner
// summarises the run into a Context.
package judge
