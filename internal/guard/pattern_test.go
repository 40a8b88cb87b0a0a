package guard

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidatePattern(t *testing.T) {
	t.Parallel()

	valid := []string{
		"*",
		"example.com",
		"EXAMPLE.com",
		"example.com.",
		"*.example.com",
		"*.Example.COM.",
		"a.b.c.example.co.uk",
		"*.com",
		"localhost",
		"*.localhost",
		"127.0.0.1",
		"10.0.0.1",
		"::1",
		"[::1]",
		"2001:db8::1",
		"[2001:db8::1]",
		"::ffff:10.0.0.1",
		"bücher.de",
		"*.bücher.de",
		"xn--bcher-kva.de",
		"a-b.example.com",
		"123.example.com",
		"x.y",
	}
	for _, p := range valid {
		t.Run("valid/"+p, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, ValidatePattern(p))
		})
	}

	invalid := []struct {
		pattern string
		want    string
	}{
		{"", "empty"},
		{" example.com", "whitespace"},
		{"example.com ", "whitespace"},
		{"exa mple.com", "whitespace"},
		{"example.com\t", "whitespace"},
		{"example\x00.com", "control"},
		{"https://example.com", `remove the scheme "https://"`},
		{"http://example.com/", `remove the scheme "http://"`},
		{"example.com/path", "path"},
		{"example.com/", "path"},
		{`example.com\x`, "path"},
		{"example.com:8080", `port (remove ":8080")`},
		{"*.example.com:443", `port (remove ":443")`},
		{"127.0.0.1:80", `port (remove ":80")`},
		{"[::1]:80", `port (remove ":80")`},
		{"localhost:3000", "port"},
		{"a.*.com", `"*" is only allowed alone or as the whole leading label`},
		{"example.*", `"*" is only allowed`},
		{"*example.com", `"*" is only allowed`},
		{"*.*.example.com", `"*" is only allowed`},
		{"*.", "empty"},
		{"**", `"**" is not supported`},
		{"**.example.com", `"**" is not supported`},
		{".example.com", "empty label"},
		{"example..com", "empty label"},
		{"example.com..", "empty label"},
		{".", "empty"},
		{"-example.com", "hyphen"},
		{"example-.com", "hyphen"},
		{"ex_ample.com", "invalid character '_'"},
		{"exa$mple.com", "invalid character '$'"},
		{"user@example.com", "invalid character '@'"},
		{"example.com?x", "invalid character '?'"},
		{"a:b", "invalid character ':'"},
		{"[example.com]", "not a valid IPv6 address"},
		{"[1.2.3.4]", "not a valid IPv6 address"},
		{"[::1", `missing "]"`},
		{"[::1]x", "unexpected"},
		{"fe80::1%eth0", "zone"},
		{"*.127.0.0.1", "wildcard cannot be combined with an IP address"},
		{"1.2.3", "not a valid IPv4 address; write it in dotted-decimal form (1.2.0.3)"},
		{"0x7f.1", "dotted-decimal form (127.0.0.1)"},
		{"010.0.0.1", "dotted-decimal"},
		{"256.1.1.1", "not a valid IPv4 address"},
		{"1.2.3.4.5", "not a valid IPv4 address"},
		{"example.123", "not a valid IPv4 address"},
		{"xn--zz.com", "internationalised"},
		{labels(64) + ".com", "longer than 63"},
		{labels(60) + "." + labels(60) + "." + labels(60) + "." + labels(60) + "." + labels(10), "longer than 253"},
		{"\xff.com", "UTF-8"},
	}
	for _, tc := range invalid {
		t.Run("invalid/"+tc.pattern, func(t *testing.T) {
			t.Parallel()
			err := ValidatePattern(tc.pattern)
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "invalid domain pattern")
		})
	}
}

func labels(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func TestCompilePatternNormalises(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   string
		kind patternKind
		name string
		addr string
	}{
		{"*", kindAny, "", ""},
		{"Example.COM.", kindExact, "example.com", ""},
		{"*.Example.COM", kindSuffix, ".example.com", ""},
		{"BÜCHER.de", kindExact, "xn--bcher-kva.de", ""},
		{"*.bücher.de", kindSuffix, ".xn--bcher-kva.de", ""},
		{"XN--BCHER-KVA.DE", kindExact, "xn--bcher-kva.de", ""},
		{"LocalHost", kindExact, "localhost", ""},
		{"[::1]", kindIP, "", "::1"},
		{"0:0::1", kindIP, "", "::1"},
		{"::ffff:10.0.0.1", kindIP, "", "10.0.0.1"},
		{"127.0.0.1", kindIP, "", "127.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			pt, err := compilePattern(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.kind, pt.kind)
			require.Equal(t, tc.name, pt.name)
			require.Equal(t, tc.in, pt.raw)
			if tc.addr != "" {
				require.Equal(t, netip.MustParseAddr(tc.addr), pt.addr)
			}
		})
	}
}

func TestParseWHATWGIPv4(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   string
		want string // "" means not an IPv4 address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"10.1.2", "10.1.0.2"},
		{"0x", "0.0.0.0"},
		{"0", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"4294967296", ""},
		{"256.0.0.1", ""},
		{"1.2.3.256", ""},
		{"1.2.65536", ""},
		{"1.2.3.4.5", ""},
		{"08.0.0.1", ""},
		{"0xg.1", ""},
		{"99999999999999999999999", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			a, ok := parseWHATWGIPv4(tc.in)
			if tc.want == "" {
				require.False(t, ok, "got %s", a)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.want, a.String())
		})
	}
}
