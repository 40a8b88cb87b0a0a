// Package secrets seals values at rest with AES-256-GCM. A Keyring holds one
// primary key, which seals, and any number of older keys, which still open
// what they sealed, so keys can rotate without re-encrypting at once. Every
// sealed value starts with its key's ID.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// ErrUnknownKey: a sealed value names a key the keyring does not hold.
var ErrUnknownKey = errors.New("unknown encryption key")

// ErrCorrupt: a sealed value is malformed or was tampered with.
var ErrCorrupt = errors.New("sealed value is corrupt")

// Key is one 256-bit key with its ID.
type Key struct {
	// ID is [A-Za-z0-9_.-]{1,32}, stored with every value it seals.
	ID  string
	Key [32]byte
}

// Keyring seals with its primary key and opens with any of its keys.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// New returns a keyring whose first key is the primary one.
func New(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: no keys")
	}
	kr := &Keyring{primary: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		if !keyIDPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("secrets: key ID %q must match %s", k.ID, keyIDPattern)
		}
		if _, dup := kr.aeads[k.ID]; dup {
			return nil, fmt.Errorf("secrets: key ID %q given twice", k.ID)
		}
		block, err := aes.NewCipher(k.Key[:])
		if err != nil {
			return nil, fmt.Errorf("secrets: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secrets: %w", err)
		}
		kr.aeads[k.ID] = aead
	}
	return kr, nil
}

// Parse reads a key list: entries "id:key" separated by commas or
// newlines, the first one primary, each key 32 bytes as 64 hex digits or
// standard base64. Blank lines and lines starting with # are ignored.
func Parse(s string) (*Keyring, error) {
	var keys []Key
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, material, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("secrets: key entry must be \"id:key\" (entry %d)", len(keys)+1)
		}
		raw, err := decodeKey(strings.TrimSpace(material))
		if err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", strings.TrimSpace(id), err)
		}
		k := Key{ID: strings.TrimSpace(id)}
		copy(k.Key[:], raw)
		keys = append(keys, k)
	}
	return New(keys...)
}

// Load reads a key list from a file (see Parse).
func Load(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: read key file: %w", err)
	}
	return Parse(string(b))
}

func decodeKey(s string) ([]byte, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, errors.New("must be 32 bytes as 64 hex digits or base64")
}

// PrimaryID is the ID of the key that seals.
func (k *Keyring) PrimaryID() string { return k.primary }

// Seal encrypts plaintext with the primary key. aad binds the value to its
// place (a tenant and a name) so a sealed value copied elsewhere does not
// open. The result is "<key id>" 0x00 nonce ciphertext.
func (k *Keyring) Seal(plaintext, aad []byte) []byte {
	aead := k.aeads[k.primary]
	out := make([]byte, 0, len(k.primary)+1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out = append(out, k.primary...)
	out = append(out, 0)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plaintext, aad)
}

// Open decrypts a value Seal returned with the same aad.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	id, rest, ok := strings.Cut(string(sealed), "\x00")
	if !ok || id == "" {
		return nil, ErrCorrupt
	}
	aead, found := k.aeads[id]
	if !found {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, id)
	}
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrCorrupt
	}
	nonce, ct := []byte(rest[:aead.NonceSize()]), []byte(rest[aead.NonceSize():])
	pt, err := aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, ErrCorrupt
	}
	return pt, nil
}

// KeyID returns the ID of the key a sealed value names.
func KeyID(sealed []byte) string {
	id, _, _ := strings.Cut(string(sealed), "\x00")
	return id
}

// HashToken returns the SHA-256 of an API key, the form keys are stored in.
// Keys are 256-bit random values, so a plain hash (no salt, no stretching)
// is enough: they cannot be guessed from it.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// RunParamsAAD is the additional data a run's sealed params are bound to.
func RunParamsAAD(runID string) []byte { return []byte("run-params:" + runID) }
