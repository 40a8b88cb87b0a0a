// Package cli is the client side of the wayfinder binary: the commands that
// talk to a running Wayfinder over gRPC.
//
//	wayfinder run --goal … --url … [--follow]   create a run (and watch it)
//	wayfinder runs list|get|cancel|events|steps  inspect and control runs
//	wayfinder approve RUN_ID [--reject]          answer a human checkpoint
//	wayfinder media get MEDIA_ID -o FILE         download a screenshot
//	wayfinder test run FILE.yaml [--junit F]     run a test suite (exit 0 PASSED, 1 FAILED)
//	wayfinder traces list|get|pin|unpin|delete|export  replayable traces (export as a Go test or steps)
//
// Every command takes --addr (WAYFINDER_ADDR, default 127.0.0.1:9090),
// --api-key (WAYFINDER_API_KEY; the environment variable is preferred,
// since other users of the machine can read a process's flags), --tls or
// --insecure (plaintext is the default only for loopback addresses), --json
// (machine-readable output on stdout) and --timeout.
//
// Exit codes tell scripts how a followed run ended:
//
//	0  success; a followed run COMPLETED
//	1  the run FAILED
//	2  the run reached MAX_STEPS_REACHED
//	3  the run ended in ERROR
//	4  the run was CANCELLED
//	5  usage, connection or API error (nothing is known about the run's end)
//	6  the run is AWAITING_APPROVAL and --exit-on-approval was given
//	7  --timeout passed while following; the run goes on
//	130 interrupted (Ctrl-C) while following; the run goes on
//
// Errors are one line on stderr: the gRPC code, the message and any field
// violations. The API key is never printed.
package cli
