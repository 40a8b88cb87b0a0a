// Command wfbench measures Wayfinder's page layer beside Microsoft's
// Playwright MCP server on a fixed set of local pages, and the agent
// engine's overhead and tokens per step on the same pages (the runner loop
// with a zero-latency scripted model), replayed steps beside model-driven
// ones and what a replay saves, and writes it all as Markdown
// (docs/benchmarks.md). `make bench` installs the pinned @playwright/mcp
// and runs it.
//
//	wfbench [-out docs/benchmarks.md] [-iterations 15] [-pages form,table] [-engine-runs 3] [-replay-runs 3]
//
// It exits non-zero when either side fails on a page or a measurement
// outside the pages fails; the report is written anyway, with the failures.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wayfinder/wayfinder/internal/bench"
	"github.com/wayfinder/wayfinder/internal/runner"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "wfbench:", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("wfbench", flag.ContinueOnError)
	out := fs.String("out", "docs/benchmarks.md", "where to write the report (- for stdout)")
	iterations := fs.Int("iterations", 15, "measured steps per page and side")
	warmup := fs.Int("warmup", 2, "unmeasured warm-up steps per page and side (0 for the default, -1 for none)")
	leases := fs.Int("leases", 30, "pool leases timed")
	contexts := fs.Int("contexts", 4, "contexts opened to measure the memory of one")
	pages := fs.String("pages", "", "comma-separated page names to run (default: all)")
	engineRuns := fs.Int("engine-runs", 3, "agent runs per page measuring the engine's overhead and tokens per step (-1 for none)")
	engineActions := fs.Int("engine-actions", 8, "browser actions per agent run, before complete_task")
	replayRuns := fs.Int("replay-runs", 3, "strict replays of a recorded run, and model-driven runs beside them, per page (-1 for none)")
	cli := fs.String("playwright-mcp", ".tools/playwright-mcp/node_modules/@playwright/mcp/cli.js", "Playwright MCP's cli.js (installed by make bench)")
	node := fs.String("node", "node", "Node.js binary")
	chromium := fs.String("chromium", os.Getenv("WAYFINDER_CHROMIUM"), "Chromium binary for both sides (default: the system's, as the pool finds it; $WAYFINDER_CHROMIUM)")
	encoding := fs.String("encoding", bench.DefaultEncoding, "tokenizer encoding (o200k_base, cl100k_base)")
	loadOnly := fs.Bool("load", false, "measure only the service under load (no Playwright MCP, no page layer) and write those sections (to stdout unless -out is given)")
	skipLoad := fs.Bool("skip-load", false, "leave the load sections out of the full report")
	loadConc := fs.String("load-concurrency", "1,2,4", "browser capacities measured under load, comma-separated")
	loadRuns := fs.Int("load-runs-per-slot", 4, "runs queued per unit of capacity at each load level")
	loadActions := fs.Int("load-actions", 4, "browser actions per load run, before complete_task")
	loadAPI := fs.Duration("load-api-duration", 20*time.Second, "how long the open-loop API load lasts")
	loadCreate := fs.Float64("load-create-rate", 1, "CreateRun requests per second under API load, over gRPC and over REST each")
	loadGet := fs.Float64("load-get-rate", 25, "GetRun requests per second under API load, over gRPC and over REST each")
	loadReplica := fs.Int("load-replica-runs", 12, "runs drained by one replica, then by two (-1 for none)")
	resilience := fs.String("resilience", bench.DefaultResiliencePath, "the chaos tests' figures (make chaos), rendered when the file exists")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	revision := fs.String("revision", "", "the Wayfinder commit measured, for the report (default: git describe of the working tree)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	selected, err := selectPages(*pages)
	if err != nil {
		return err
	}
	concurrency, err := bench.ParseConcurrency(*loadConc)
	if err != nil {
		return err
	}
	outSet := false
	fs.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *loadOnly && !outSet {
		*out = "-"
	}
	cliPath, err := filepath.Abs(*cli)
	if err != nil {
		return err
	}

	if *revision == "" {
		*revision = gitRevision()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// A short path: Chromium puts sockets under its profile dirs.
	work, err := os.MkdirTemp("", "wfbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var serverLog bytes.Buffer
	loadCfg := bench.LoadConfig{
		Concurrency: concurrency, RunsPerSlot: *loadRuns, Actions: *loadActions,
		APIDuration: *loadAPI, CreateRate: *loadCreate, GetRate: *loadGet, ReplicaRuns: *loadReplica,
		Chromium: *chromium, WorkDir: filepath.Join(work, "load"),
		Command: strings.Join(append([]string{"go run ./cmd/wfbench"}, args...), " "), Log: os.Stderr,
	}
	if err := os.MkdirAll(loadCfg.WorkDir, 0o700); err != nil {
		return err
	}
	res, err := bench.ReadResilience(*resilience)
	if err != nil {
		return err
	}
	if *loadOnly {
		return runLoad(ctx, loadCfg, res, *chromium, *node, *revision, *out)
	}
	report, err := bench.Run(ctx, bench.Config{
		Iterations:      *iterations,
		Warmup:          *warmup,
		LeaseIterations: *leases,
		Contexts:        *contexts,
		Pages:           selected,
		Chromium:        *chromium,
		Playwright:      bench.PlaywrightConfig{Node: *node, CLI: cliPath, Stderr: &serverLog},
		WorkDir:         work,
		Encoding:        *encoding,
		OurTools:        engineTools,
		EngineRuns:      *engineRuns,
		EngineActions:   *engineActions,
		ReplayRuns:      *replayRuns,
		Revision:        *revision,
		Log:             os.Stderr,
	})
	if err != nil {
		if serverLog.Len() > 0 {
			fmt.Fprintf(os.Stderr, "wfbench: Playwright MCP's log:\n%s\n", serverLog.String())
		}
		return err
	}
	report.Resilience = res
	if !*skipLoad && ctx.Err() == nil {
		// After the page layer, whose browser and peer are gone by now:
		// the load's memory figures count every child of this process.
		if report.Load, err = bench.RunLoad(ctx, loadCfg); err != nil {
			report.Errors = append(report.Errors, err.Error())
		}
	}
	var md bytes.Buffer
	if err := bench.RenderMarkdown(&md, report); err != nil {
		return err
	}
	if *out == "-" {
		_, err = os.Stdout.Write(md.Bytes())
	} else {
		err = os.WriteFile(*out, md.Bytes(), 0o644)
		fmt.Fprintf(os.Stderr, "wfbench: wrote %s (%s)\n", *out, report.Duration.Round(time.Second))
	}
	if err != nil {
		return err
	}
	if f := report.Failures(); len(f) > 0 {
		if serverLog.Len() > 0 {
			fmt.Fprintf(os.Stderr, "wfbench: Playwright MCP's log:\n%s\n", serverLog.String())
		}
		return fmt.Errorf("%d failures:\n  %s", len(f), strings.Join(f, "\n  "))
	}
	return nil
}

// runLoad measures only the service under load and writes those
// sections.
func runLoad(ctx context.Context, cfg bench.LoadConfig, res *bench.Resilience, chromium, node, revision, out string) error {
	lr, err := bench.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	report := &bench.Report{Date: lr.Date, Duration: lr.Duration, Revision: revision, Load: lr, Resilience: res,
		Machine: bench.DescribeMachine(ctx, chromium, node, "")}
	var md bytes.Buffer
	if err := bench.RenderLoadMarkdown(&md, report); err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(md.Bytes())
	} else {
		err = os.WriteFile(out, md.Bytes(), 0o644)
	}
	if err != nil {
		return err
	}
	if len(lr.Errors) > 0 {
		return fmt.Errorf("%d failures:\n  %s", len(lr.Errors), strings.Join(lr.Errors, "\n  "))
	}
	return nil
}

// engineTools renders the tool definitions the engine offers the
// controller, as the benchmark renders Playwright MCP's.
func engineTools() (string, int, error) {
	tools := runner.EngineTools()
	defs, err := bench.LLMToolDefinitions(tools)
	return defs, len(tools), err
}

// gitRevision describes the working tree's commit ("abc1234", with
// "-dirty" when it has uncommitted changes); "" outside a git checkout.
func gitRevision() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// selectPages returns the pages named in list (all when empty).
func selectPages(list string) ([]bench.Page, error) {
	all := bench.Pages()
	if list == "" {
		return all, nil
	}
	var out []bench.Page
	for name := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(all, func(p bench.Page) bool { return p.Name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("no page %q", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}
