package netguard

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countingResolver struct{ calls int }

func (r *countingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.calls++
	return []netip.Addr{netip.AddrFrom4([4]byte{93, 184, 215, byte(r.calls)})}, nil
}

func TestDNSCacheExpires(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	base := &countingResolver{}
	c := &dnsCache{base: base, ttl: time.Minute, now: func() time.Time { return now }, entries: map[string]dnsEntry{}}
	ctx := context.Background()
	first, err := c.LookupNetIP(ctx, "ip", "a.test")
	require.NoError(t, err)
	now = now.Add(59 * time.Second)
	again, err := c.LookupNetIP(ctx, "ip", "a.test")
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, 1, base.calls)
	now = now.Add(time.Second)
	later, err := c.LookupNetIP(ctx, "ip", "a.test")
	require.NoError(t, err)
	require.NotEqual(t, first, later)
	require.Equal(t, 2, base.calls)
}

func TestDNSCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := &dnsCache{base: &countingResolver{}, ttl: time.Hour, now: time.Now, entries: map[string]dnsEntry{}}
	for i := range maxCachedHosts + 10 {
		_, err := c.LookupNetIP(context.Background(), "ip", string(rune('a'+i%26))+time.Duration(i).String())
		require.NoError(t, err)
		require.LessOrEqual(t, len(c.entries), maxCachedHosts)
	}
}

func TestLooksNumeric(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"0x7f.1": true, "2130706433": true, "1.2.3.4": true, "example.123": true, "a.0X1F": true,
		"example.com": false, "0x.com": false, "a.0xg": false, "1.2.3.4.example": false, "": false, "a.": false,
	} {
		require.Equal(t, want, looksNumeric(host), host)
	}
}
