package netguard_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
)

// staticResolver answers every name with 127.0.0.1.
type staticResolver struct{}

func (staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// BenchmarkProxyRequest measures a small GET (keep-alive on both sides)
// directly and through the proxy, sequentially (latency: ns/op, the
// difference is the per-request overhead) and in parallel (throughput:
// req/s); and the cost of opening a CONNECT tunnel.
func BenchmarkProxyRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>bench</title>")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	pol, err := guard.New([]string{"*.example", "site.example"}, []string{"ads.example"}, false)
	if err != nil {
		b.Fatal(err)
	}
	p, err := netguard.Start(netguard.Config{Policy: pol, Resolver: staticResolver{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	pu, _ := url.Parse(p.URL())

	client := func(proxy bool) *http.Client {
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		if proxy {
			tr.Proxy = http.ProxyURL(pu)
		}
		return &http.Client{Transport: tr}
	}
	get := func(b *testing.B, c *http.Client, u string) {
		res, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
	direct := srv.URL + "/"
	proxied := fmt.Sprintf("http://site.example:%d/", port)

	for _, bc := range []struct {
		name  string
		proxy bool
		url   string
	}{{"direct", false, direct}, {"proxied", true, proxied}} {
		b.Run(bc.name, func(b *testing.B) {
			c := client(bc.proxy)
			defer c.CloseIdleConnections()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				get(b, c, bc.url)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
		b.Run(bc.name+"_parallel", func(b *testing.B) {
			c := client(bc.proxy)
			defer c.CloseIdleConnections()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get(b, c, bc.url)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}

	b.Run("blocked", func(b *testing.B) {
		c := client(true)
		defer c.CloseIdleConnections()
		u := fmt.Sprintf("http://ads.example:%d/", port)
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	})

	b.Run("connect_tunnel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := net.Dial("tcp", pu.Host)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT site.example:%d HTTP/1.1\r\nHost: site.example:%d\r\n\r\n", port, port)
			res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatalf("connect: %v %v", res, err)
			}
			_ = c.Close()
		}
	})
}
