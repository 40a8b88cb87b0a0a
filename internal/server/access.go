package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// loadKeyring returns the keyring that seals credentials and run secrets:
// WAYFINDER_ENCRYPTION_KEYS, else WAYFINDER_ENCRYPTION_KEY_FILE, else
// (managed Postgres only) a key generated once in the data dir. With an
// external database and no key it refuses to start: replicas must share
// one keyring, which a generated key cannot be.
func loadKeyring(cfg config.Config, logger *slog.Logger) (*secrets.Keyring, error) {
	switch {
	case cfg.EncryptionKeys != "":
		kr, err := secrets.Parse(cfg.EncryptionKeys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.EncryptionKeysEnv, err)
		}
		return kr, nil
	case cfg.EncryptionKeyFile != "":
		return secrets.Load(cfg.EncryptionKeyFile)
	case cfg.DatabaseURL != "":
		return nil, fmt.Errorf("an encryption key is required with DATABASE_URL: set %s or WAYFINDER_ENCRYPTION_KEY_FILE (lines \"id:key\", 32 random bytes as hex, e.g. \"k1:$(openssl rand -hex 32)\")", config.EncryptionKeysEnv)
	}
	path := filepath.Join(cfg.DataDir, "encryption.key")
	kr, err := secrets.Load(path)
	if err == nil {
		return kr, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate encryption key: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	line := "# Wayfinder encryption keys (id:key); generated for the managed local database.\nlocal1:" + hex.EncodeToString(key) + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another process won the race
			return secrets.Load(path)
		}
		return nil, fmt.Errorf("write encryption key: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return nil, fmt.Errorf("write encryption key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write encryption key: %w", err)
	}
	logger.Info("generated an encryption key for credentials and run secrets", "path", path)
	return secrets.Load(path)
}

// setupAccess decides between API keys and local mode. With
// WAYFINDER_ADMIN_KEY set, every call needs a key and the admin key is
// stored (hashed) as the default tenant's admin key. Without it the server
// is single-user: no keys, and it listens on loopback only (listen
// addresses on other interfaces are moved to 127.0.0.1, and it says so).
func setupAccess(ctx context.Context, cfg *config.Config, st *store.Store, logger *slog.Logger) (local bool, err error) {
	if cfg.AdminKey == "" {
		for _, addr := range []*string{&cfg.GRPCAddr, &cfg.HTTPAddr} {
			if moved, ok := loopbackOnly(*addr); !ok {
				logger.Warn("no "+config.AdminKeyEnv+" set: local single-user mode listens on loopback only; set an admin key to serve other hosts",
					"configured", *addr, "listening", moved)
				*addr = moved
			}
		}
		logger.Info("local single-user mode: no API keys; loopback only")
		return true, nil
	}
	if _, err := st.EnsureAPIKey(ctx, store.NewAPIKey{
		Tenant: tenant.Default, Name: "bootstrap admin key (" + config.AdminKeyEnv + ")",
		Prefix: "(env)", Hash: secrets.HashToken(cfg.AdminKey), Admin: true,
	}); err != nil {
		return false, err
	}
	logger.Info("API keys required", "admin_key", "from "+config.AdminKeyEnv)
	return false, nil
}

// loopbackOnly returns addr bound to loopback: unchanged (ok) when its
// host is a loopback address or localhost, else the same port on
// 127.0.0.1.
func loopbackOnly(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, true // Listen reports it
	}
	if host == "localhost" {
		return addr, true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, true
	}
	return net.JoinHostPort("127.0.0.1", port), false
}

// Reseal re-encrypts every stored credential that is not sealed with the
// primary encryption key (the first of WAYFINDER_ENCRYPTION_KEYS), so that
// an old key can be retired after a rotation.
func Reseal(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	dbpool, _, closeDB, err := OpenDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDB()
	kr, err := loadKeyring(cfg, logger)
	if err != nil {
		return err
	}
	n, err := store.New(dbpool).ResealCredentials(ctx, kr)
	if err != nil {
		return err
	}
	logger.Info("credentials resealed", "count", n, "key_id", kr.PrimaryID())
	return nil
}
