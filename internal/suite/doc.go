// Package suite holds what Wayfinder's UI tests mean, apart from where they
// are kept and how they are run: the suite file format, the oracles that
// judge a test's run, and the reports of a suite run.
//
//   - ParseFile and MarshalFile read and write a suite file (YAML, see
//     docs/suites.md): a Suite and its Tests, with each test's run
//     parameters in protojson's snake_case names. Parsing is strict:
//     unknown keys, wrong types and duplicate tests are errors that name
//     the line (*FileError), and MarshalFile's output parses back to the
//     same messages.
//   - AttemptParams turns a test into the RunParams of one attempt: the
//     test's parameters, a report indicator for each final-page oracle
//     (text_present, element_present) and the test's timeout as the run's
//     run_timeout.
//   - Evaluate judges an attempt's finished run (Evidence) with the test's
//     oracles (Oracles: the default is a single goal oracle) and weighs their
//     scores into a Verdict. A rubric oracle asks a model (ModelFor) for a
//     grade through a forced submit_grade tool call, with the page-derived
//     evidence fenced as untrusted data.
//   - JUnit and JSONReport write a SuiteRun for CI; Summarize counts its
//     tests by outcome.
//
// The package is pure: no storage, no server, no browser. The suite run
// executor (internal/suiterun), the TestService (internal/api) and the CLI
// (internal/cli) use it.
package suite
