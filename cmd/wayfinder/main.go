// Command wayfinder is the Wayfinder service (API, workers and browser pool)
// and its command-line client, in one binary.
//
//	wayfinder [serve] [flags]   run the service (default)
//	wayfinder migrate [flags]   apply database migrations and exit
//	wayfinder demo [flags]      start the service on its defaults, run a task against a bundled demo site
//	wayfinder reseal [flags]    re-encrypt stored credentials with the primary encryption key
//	wayfinder version           print the version, commit, build date and Go version
//	wayfinder health [--url U]  GET the server's /healthz; exit 0 when it answers 200 (the image's HEALTHCHECK)
//
// The service's flags have WAYFINDER_* environment variables; see
// `wayfinder -h`. The client commands talk to a running service over gRPC
// (--addr / WAYFINDER_ADDR, API key in WAYFINDER_API_KEY; see
// `wayfinder run -h`):
//
//	wayfinder run --goal … --url … [--follow]       create a run; --follow shows its progress and exits by its status
//	wayfinder runs list|get|cancel|events|steps     list, inspect and cancel runs
//	wayfinder approve RUN_ID [--reject]             answer a run's human checkpoint
//	wayfinder media get MEDIA_ID -o FILE            download a screenshot
//	wayfinder test run FILE.yaml [--junit F]        run a test suite from CI (exit 0 PASSED, 1 FAILED)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	_ "time/tzdata" // run time zones must validate on hosts without tzdata

	"github.com/wayfinder/wayfinder/internal/cli"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/demo"
	"github.com/wayfinder/wayfinder/internal/server"
	"github.com/wayfinder/wayfinder/internal/telemetry"
)

func main() {
	if len(os.Args) > 1 && cli.IsCommand(os.Args[1]) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
		stop()
		os.Exit(code)
	}
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "wayfinder:", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			return runVersion(args[1:], os.Stdout)
		case "health":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runHealth(ctx, args[1:], os.Getenv, os.Stdout)
		}
	}
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "migrate" || args[0] == "demo" || args[0] == "reseal") {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.Load("wayfinder "+cmd, args, os.Getenv)
	if err != nil {
		return err
	}
	logger := telemetry.Logger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	switch cmd {
	case "migrate":
		_, _, closeDB, err := server.OpenDatabase(ctx, cfg, logger)
		if err != nil {
			return err
		}
		closeDB()
		logger.Info("migrations applied")
		return nil
	case "demo":
		return runDemo(ctx, cfg)
	case "reseal":
		return server.Reseal(ctx, cfg, logger)
	}
	tp, shutdownTracing, err := telemetry.TracerProvider(ctx, os.Getenv)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.WithoutCancel(ctx)) }()
	return server.Run(ctx, cfg, server.Options{Logger: logger, TracerProvider: tp})
}

// runDemo starts the service in-process with quiet logs, serves the demo
// site, runs one task end to end and stops. DEMO_KEEP=1 keeps the service
// running afterwards so the screenshot URL can be opened.
func runDemo(ctx context.Context, cfg config.Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(cfg.DataDir, "demo-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger := telemetry.Logger(logFile, "text", cfg.LogLevel)

	siteURL, err := demo.ServeSite(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("demo site:   %s\nserver log:  %s\ndata dir:    %s\n", siteURL, logPath, cfg.DataDir)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan server.Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, server.Options{Logger: logger, Ready: func(a server.Addrs) { ready <- a }})
	}()
	var addrs server.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		return fmt.Errorf("server did not start (see %s): %w", logPath, err)
	}
	fmt.Printf("server:      REST http://%s  gRPC %s\n\n", addrs.HTTP, addrs.GRPC)
	res, err := demo.Run(ctx, addrs.HTTP, cfg.AdminKey, siteURL, cfg.DataDir, os.Stdout)
	if err == nil && res.Status != "RUN_STATUS_COMPLETED" {
		err = fmt.Errorf("demo run ended %s", res.Status)
	}
	if err == nil && os.Getenv("DEMO_KEEP") == "1" {
		fmt.Println("\nDEMO_KEEP=1: the service keeps running; press Ctrl-C to stop it.")
		<-ctx.Done()
	}
	cancel()
	if serr := <-done; serr != nil && err == nil {
		err = serr
	}
	return err
}
