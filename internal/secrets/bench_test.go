package secrets_test

import (
	"testing"

	"github.com/wayfinder/wayfinder/internal/secrets"
)

// BenchmarkSealOpen: sealing and opening a typical credential (a few
// fields as JSON, ~200 bytes).
func BenchmarkSealOpen(b *testing.B) {
	kr, err := secrets.Parse("k1:" + hexKey1)
	if err != nil {
		b.Fatal(err)
	}
	plain := []byte(`{"client_id":"wayfinder-ci","client_secret":"0123456789abcdef0123456789abcdef","token_url":"https://auth.example.com/oauth/token","scope":"read write"}`)
	aad := []byte("credential:tenant:name")
	b.ReportAllocs()
	for b.Loop() {
		sealed := kr.Seal(plain, aad)
		if _, err := kr.Open(sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}
