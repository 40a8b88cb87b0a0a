package secrets_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/secrets"
)

const (
	hexKey1 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	hexKey2 = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	kr, err := secrets.Parse("k1:" + hexKey1)
	require.NoError(t, err)
	plain := []byte("hunter2-password")
	sealed := kr.Seal(plain, []byte("credential:t:n"))
	require.False(t, bytes.Contains(sealed, plain), "sealed value holds the plaintext")
	require.Equal(t, "k1", secrets.KeyID(sealed))
	require.NotEqual(t, sealed, kr.Seal(plain, []byte("credential:t:n")), "nonces must differ")

	got, err := kr.Open(sealed, []byte("credential:t:n"))
	require.NoError(t, err)
	require.Equal(t, plain, got)

	tests := []struct {
		name   string
		sealed []byte
		aad    string
		want   error
	}{
		{"other aad", sealed, "credential:t:other", secrets.ErrCorrupt},
		{"flipped byte", flip(sealed, len(sealed)-1), "credential:t:n", secrets.ErrCorrupt},
		{"truncated", sealed[:5], "credential:t:n", secrets.ErrCorrupt},
		{"no key id", []byte("garbage"), "credential:t:n", secrets.ErrCorrupt},
		{"unknown key", append([]byte("k9"), sealed[2:]...), "credential:t:n", secrets.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kr.Open(tt.sealed, []byte(tt.aad))
			require.ErrorIs(t, err, tt.want)
			require.NotContains(t, err.Error(), string(plain))
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

// TestRotation: a keyring with a new primary key still opens what the old
// key sealed, and seals with the new one.
func TestRotation(t *testing.T) {
	t.Parallel()
	old, err := secrets.Parse("k1:" + hexKey1)
	require.NoError(t, err)
	sealed := old.Seal([]byte("v"), nil)

	rotated, err := secrets.Parse("k2:" + hexKey2 + ",k1:" + hexKey1)
	require.NoError(t, err)
	require.Equal(t, "k2", rotated.PrimaryID())
	got, err := rotated.Open(sealed, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("v"), got)
	require.Equal(t, "k2", secrets.KeyID(rotated.Seal([]byte("v"), nil)))

	newOnly, err := secrets.Parse("k2:" + hexKey2)
	require.NoError(t, err)
	_, err = newOnly.Open(sealed, nil)
	require.ErrorIs(t, err, secrets.ErrUnknownKey)
}

func TestParse(t *testing.T) {
	t.Parallel()
	b64 := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	tests := []struct {
		name, in, wantErr, wantPrimary string
	}{
		{name: "hex", in: "a:" + hexKey1, wantPrimary: "a"},
		{name: "base64", in: "b:" + b64, wantPrimary: "b"},
		{name: "file lines with comments", in: "# keys\n\nnew:" + hexKey2 + "\nold:" + hexKey1 + "\n", wantPrimary: "new"},
		{name: "empty", in: "", wantErr: "no keys"},
		{name: "no id", in: hexKey1, wantErr: `"id:key"`},
		{name: "short key", in: "a:abcd", wantErr: "32 bytes"},
		{name: "bad id", in: "a b:" + hexKey1, wantErr: "must match"},
		{name: "duplicate id", in: "a:" + hexKey1 + ",a:" + hexKey2, wantErr: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := secrets.Parse(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.False(t, strings.Contains(err.Error(), hexKey1), "error echoes key material")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantPrimary, kr.PrimaryID())
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte("f1:"+hexKey1+"\n"), 0o600))
	kr, err := secrets.Load(path)
	require.NoError(t, err)
	require.Equal(t, "f1", kr.PrimaryID())
	_, err = secrets.Load(filepath.Join(t.TempDir(), "missing"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

func TestHashToken(t *testing.T) {
	t.Parallel()
	require.Len(t, secrets.HashToken("wf_abc"), 32)
	require.Equal(t, secrets.HashToken("wf_abc"), secrets.HashToken("wf_abc"))
	require.NotEqual(t, secrets.HashToken("wf_abc"), secrets.HashToken("wf_abd"))
}
