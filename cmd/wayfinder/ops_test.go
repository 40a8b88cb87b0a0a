package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"", "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/healthz"},
		{":9000", "http://127.0.0.1:9000/healthz"},
		{"[::]:8080", "http://127.0.0.1:8080/healthz"},
		{"10.1.2.3:8080", "http://10.1.2.3:8080/healthz"},
		{"[::1]:8080", "http://[::1]:8080/healthz"},
	} {
		got, err := healthURL(tc.addr)
		if err != nil || got != tc.want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
	if _, err := healthURL("no-port"); err == nil {
		t.Error("healthURL(no-port): no error")
	}
}

func TestHealth(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	env := func(k string) string {
		if k == "WAYFINDER_HTTP_ADDR" {
			return addr
		}
		return ""
	}
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name    string
		args    []string
		getenv  func(string) string
		status  int
		wantErr string
	}{
		{"from env", nil, env, http.StatusOK, ""},
		{"from url", []string{"--url", srv.URL + "/healthz"}, noEnv, http.StatusOK, ""},
		{"unhealthy", nil, env, http.StatusServiceUnavailable, "503"},
		{"wrong path", []string{"--url", srv.URL + "/nope"}, noEnv, http.StatusOK, "404"},
		{"bad url", []string{"--url", "localhost:1"}, noEnv, http.StatusOK, "absolute http(s) URL"},
		{"extra args", []string{"x"}, env, http.StatusOK, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status = tc.status
			var out bytes.Buffer
			err := runHealth(context.Background(), tc.args, tc.getenv, &out)
			if tc.wantErr == "" {
				if err != nil || !strings.HasPrefix(out.String(), "ok ") {
					t.Fatalf("runHealth = %v, output %q", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("runHealth = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := runVersion(nil, &out); err != nil || !strings.HasPrefix(out.String(), "wayfinder dev (commit ") {
		t.Fatalf("runVersion = %v, %q", err, out.String())
	}
	if err := runVersion([]string{"x"}, &out); err == nil {
		t.Fatal("runVersion(x): no error")
	}
}
