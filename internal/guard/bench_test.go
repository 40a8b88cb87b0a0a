package guard

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
)

// staticResolver answers every lookup with the same addresses, without
// allocating.
type staticResolver []netip.Addr

func newStaticResolver(addrs ...string) staticResolver {
	r := make(staticResolver, 0, len(addrs))
	for _, a := range addrs {
		r = append(r, netip.MustParseAddr(a))
	}
	return r
}

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()

	// 20 patterns: the host matches the last allowed one, so every pattern
	// is tried.
	allowed := make([]string, 0, 15)
	for i := range 14 {
		allowed = append(allowed, fmt.Sprintf("*.site%d.example", i))
	}
	allowed = append(allowed, "*.example.com")
	blocked := make([]string, 0, 5)
	for i := range 5 {
		blocked = append(blocked, fmt.Sprintf("ads%d.example.com", i))
	}
	twenty, err := New(allowed, blocked, false)
	if err != nil {
		b.Fatal(err)
	}
	twenty = twenty.WithResolver(newStaticResolver("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"))

	open, err := New(nil, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	open = open.WithResolver(newStaticResolver())

	cases := []struct {
		name string
		p    *Policy
		url  string
	}{
		{"public_ip_literal", open, "https://93.184.215.14/index.html"},
		{"hostname_20_patterns", twenty, "https://www.example.com/path?q=1"},
	}
	for _, c := range cases {
		if err := c.p.Check(ctx, c.url); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.p.Check(ctx, c.url); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
