package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/wayfinder/wayfinder/internal/version"
)

// defaultHTTPAddr is config's default for WAYFINDER_HTTP_ADDR.
const defaultHTTPAddr = "127.0.0.1:8080"

// runVersion prints the build information.
func runVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wayfinder version", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected arguments %q", fs.Args())
	}
	_, err := fmt.Fprintln(stdout, version.Get())
	return err
}

// runHealth GETs the server's /healthz and fails unless it answers 200: the
// container image's HEALTHCHECK (the image has no curl). The default URL is
// built from WAYFINDER_HTTP_ADDR, with a wildcard host replaced by loopback.
func runHealth(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wayfinder health", flag.ContinueOnError)
	target := fs.String("url", "", "URL to GET (default http://WAYFINDER_HTTP_ADDR/healthz, a wildcard host as 127.0.0.1)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("health: unexpected arguments %q", fs.Args())
	}
	if *target == "" {
		u, err := healthURL(getenv("WAYFINDER_HTTP_ADDR"))
		if err != nil {
			return err
		}
		*target = u
	}
	if u, err := url.Parse(*target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("health: --url must be an absolute http(s) URL")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *target, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *target, resp.Status)
	}
	_, err = fmt.Fprintf(stdout, "ok %s\n", *target)
	return err
}

// healthURL is the /healthz URL of a server listening on addr (host:port).
func healthURL(addr string) (string, error) {
	if addr == "" {
		addr = defaultHTTPAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("health: WAYFINDER_HTTP_ADDR=%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
