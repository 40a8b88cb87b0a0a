package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fakeEnv(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("wayfinder", nil, fakeEnv(nil))
	require.NoError(t, err)
	wantDataDir := "/var/lib/wayfinder"
	if os.Geteuid() != 0 {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		wantDataDir = filepath.Join(home, ".local", "share", "wayfinder")
	}
	require.Equal(t, Config{
		GRPCAddr:                  "127.0.0.1:9090",
		HTTPAddr:                  "127.0.0.1:8080",
		DatabaseURL:               "",
		DataDir:                   wantDataDir,
		PGBin:                     "",
		PGUser:                    "postgres",
		Role:                      RoleAll,
		Chromium:                  "",
		BrowserCapacity:           2,
		BrowserContextsPerProcess: 4,
		BrowserProcessPerRun:      false,
		BrowserRecycleAfter:       100,
		BrowserMemoryLimit:        2 << 30,
		AllowPrivateNetworks:      false,
		RunTimeout:                10 * time.Minute,
		ShutdownTimeout:           30 * time.Second,
		TakeoverIdle:              5 * time.Minute,
		LogLevel:                  "info",
		LogFormat:                 "json",
		ModelProvider:             "auto",
		CallbackHost:              "127.0.0.1",
		MediaStore:                MediaPostgres,
		S3:                        S3{Region: "us-east-1", Prefix: "wayfinder"},
	}, c)
}

// TestSecretsFromEnvOnly: the admin key and encryption keys come from the
// environment only; a short admin key is refused without echoing it.
func TestSecretsFromEnvOnly(t *testing.T) {
	t.Parallel()
	c, err := Load("wayfinder", nil, fakeEnv(map[string]string{
		AdminKeyEnv: "0123456789abcdef0123456789abcdef", EncryptionKeysEnv: "k1:abc",
	}))
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123456789abcdef", c.AdminKey)
	require.Equal(t, "k1:abc", c.EncryptionKeys)

	_, err = Load("wayfinder", nil, fakeEnv(map[string]string{AdminKeyEnv: "short-key"}))
	require.ErrorContains(t, err, "at least 32 characters")
	require.NotContains(t, err.Error(), "short-key")

	_, err = Load("wayfinder", []string{"-admin-key", "x"}, fakeEnv(nil))
	require.Error(t, err, "the admin key must not be a flag")
}

func TestLoadModels(t *testing.T) {
	t.Parallel()
	c, err := Load("wayfinder", []string{"-model-provider", "openai", "-openai-base-url", "http://127.0.0.1:8000/v1"},
		fakeEnv(map[string]string{"OPENAI_API_KEY": "sk-test", "GOOGLE_API_KEY": "g-key", "WAYFINDER_MODEL": "gpt-4.1-mini"}))
	require.NoError(t, err)
	require.Equal(t, "openai", c.ModelProvider)
	require.Equal(t, "gpt-4.1-mini", c.Model)
	require.Equal(t, map[string]string{"openai": "http://127.0.0.1:8000/v1"}, c.BaseURLs)
	require.Equal(t, map[string]string{"openai": "sk-test", "gemini": "g-key"}, c.APIKeys)

	for _, bad := range []map[string]string{
		{"WAYFINDER_MODEL_PROVIDER": "cohere"},
		{"WAYFINDER_ANTHROPIC_BASE_URL": "ftp://x"},
		{"WAYFINDER_OPENAI_BASE_URL": "not a url"},
	} {
		_, err := Load("wayfinder", nil, fakeEnv(bad))
		require.Error(t, err, "%v", bad)
	}
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"WAYFINDER_GRPC_ADDR":              "0.0.0.0:9999",
		"WAYFINDER_HTTP_ADDR":              "0.0.0.0:8888",
		"DATABASE_URL":                     "postgres://env/db",
		"WAYFINDER_DATA_DIR":               "/env/data",
		"WAYFINDER_ROLE":                   "api",
		"WAYFINDER_BROWSER_CAPACITY":       "4",
		"WAYFINDER_ALLOW_PRIVATE_NETWORKS": "true",
		"WAYFINDER_RUN_TIMEOUT":            "5m",
		"WAYFINDER_LOG_LEVEL":              "warn",
	}
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{
			name: "default",
			check: func(t *testing.T, c Config) {
				require.Equal(t, "127.0.0.1:9090", c.GRPCAddr)
				require.Equal(t, RoleAll, c.Role)
				require.Equal(t, 2, c.BrowserCapacity)
				require.Equal(t, 10*time.Minute, c.RunTimeout)
			},
		},
		{
			name: "env over default",
			env:  env,
			check: func(t *testing.T, c Config) {
				require.Equal(t, "0.0.0.0:9999", c.GRPCAddr)
				require.Equal(t, "0.0.0.0:8888", c.HTTPAddr)
				require.Equal(t, "postgres://env/db", c.DatabaseURL)
				require.Equal(t, "/env/data", c.DataDir)
				require.Equal(t, RoleAPI, c.Role)
				require.Equal(t, 4, c.BrowserCapacity)
				require.True(t, c.AllowPrivateNetworks)
				require.Equal(t, 5*time.Minute, c.RunTimeout)
				require.Equal(t, "warn", c.LogLevel)
				// Unset in the environment: still the default.
				require.Equal(t, "json", c.LogFormat)
				require.Equal(t, 30*time.Second, c.ShutdownTimeout)
			},
		},
		{
			name: "flag over env",
			env:  env,
			args: []string{
				"-grpc-addr", "10.0.0.1:1", "--http-addr=10.0.0.1:2", "-data-dir", "/flag/data",
				"-role=worker", "-browser-capacity", "8", "-allow-private-networks=false",
				"-run-timeout", "90s", "-log-level", "debug", "-log-format", "text",
			},
			check: func(t *testing.T, c Config) {
				require.Equal(t, "10.0.0.1:1", c.GRPCAddr)
				require.Equal(t, "10.0.0.1:2", c.HTTPAddr)
				require.Equal(t, "/flag/data", c.DataDir)
				require.Equal(t, RoleWorker, c.Role)
				require.Equal(t, 8, c.BrowserCapacity)
				require.False(t, c.AllowPrivateNetworks)
				require.Equal(t, 90*time.Second, c.RunTimeout)
				require.Equal(t, "debug", c.LogLevel)
				require.Equal(t, "text", c.LogFormat)
				// No flag: the environment still applies.
				require.Equal(t, "postgres://env/db", c.DatabaseURL)
			},
		},
		{
			name: "browser pool",
			env:  map[string]string{"WAYFINDER_BROWSER_MEMORY_LIMIT": "1500MiB", "WAYFINDER_BROWSER_RECYCLE_AFTER": "7"},
			args: []string{"-browser-process-per-run=true", "-browser-contexts-per-process=2"},
			check: func(t *testing.T, c Config) {
				require.Equal(t, int64(1500<<20), c.BrowserMemoryLimit)
				require.Equal(t, 7, c.BrowserRecycleAfter)
				require.True(t, c.BrowserProcessPerRun)
				require.Equal(t, 2, c.BrowserContextsPerProcess)
			},
		},
		{
			name: "memory limit in decimal units",
			env:  map[string]string{"WAYFINDER_BROWSER_MEMORY_LIMIT": "1.5GB"},
			check: func(t *testing.T, c Config) {
				require.Equal(t, int64(1_500_000_000), c.BrowserMemoryLimit)
			},
		},
		{
			name: "flag over default",
			args: []string{"-browser-capacity=1", "-shutdown-timeout=0s"},
			check: func(t *testing.T, c Config) {
				require.Equal(t, 1, c.BrowserCapacity)
				require.Equal(t, time.Duration(0), c.ShutdownTimeout)
				require.Equal(t, "127.0.0.1:9090", c.GRPCAddr)
			},
		},
		{
			name: "XDG data dir when not root",
			env:  map[string]string{"XDG_DATA_HOME": "/xdg"},
			check: func(t *testing.T, c Config) {
				if os.Geteuid() == 0 {
					require.Equal(t, "/var/lib/wayfinder", c.DataDir)
					return
				}
				require.Equal(t, "/xdg/wayfinder", c.DataDir)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load("wayfinder", tt.args, fakeEnv(tt.env))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		// want are substrings of the error.
		want []string
	}{
		{name: "role from env", env: map[string]string{"WAYFINDER_ROLE": "x"}, want: []string{"WAYFINDER_ROLE", `"x"`}},
		{name: "role from flag", args: []string{"-role", "x"}, want: []string{"WAYFINDER_ROLE", "-role"}},
		{name: "capacity 0", env: map[string]string{"WAYFINDER_BROWSER_CAPACITY": "0"}, want: []string{"WAYFINDER_BROWSER_CAPACITY"}},
		{name: "capacity 257", env: map[string]string{"WAYFINDER_BROWSER_CAPACITY": "257"}, want: []string{"WAYFINDER_BROWSER_CAPACITY"}},
		{name: "capacity not a number", args: []string{"-browser-capacity=two"}, want: []string{"WAYFINDER_BROWSER_CAPACITY"}},
		{name: "contexts per process 0", env: map[string]string{"WAYFINDER_BROWSER_CONTEXTS_PER_PROCESS": "0"}, want: []string{"WAYFINDER_BROWSER_CONTEXTS_PER_PROCESS"}},
		{name: "recycle after 0", env: map[string]string{"WAYFINDER_BROWSER_RECYCLE_AFTER": "0"}, want: []string{"WAYFINDER_BROWSER_RECYCLE_AFTER"}},
		{name: "memory limit tiny", env: map[string]string{"WAYFINDER_BROWSER_MEMORY_LIMIT": "1MiB"}, want: []string{"WAYFINDER_BROWSER_MEMORY_LIMIT"}},
		{name: "memory limit unitless word", env: map[string]string{"WAYFINDER_BROWSER_MEMORY_LIMIT": "lots"}, want: []string{"WAYFINDER_BROWSER_MEMORY_LIMIT"}},
		{name: "process per run maybe", env: map[string]string{"WAYFINDER_BROWSER_PROCESS_PER_RUN": "maybe"}, want: []string{"WAYFINDER_BROWSER_PROCESS_PER_RUN"}},
		{name: "run timeout abc", env: map[string]string{"WAYFINDER_RUN_TIMEOUT": "abc"}, want: []string{"WAYFINDER_RUN_TIMEOUT"}},
		{name: "run timeout too short", env: map[string]string{"WAYFINDER_RUN_TIMEOUT": "500ms"}, want: []string{"WAYFINDER_RUN_TIMEOUT"}},
		{name: "run timeout too long", env: map[string]string{"WAYFINDER_RUN_TIMEOUT": "25h"}, want: []string{"WAYFINDER_RUN_TIMEOUT"}},
		{name: "shutdown timeout negative", env: map[string]string{"WAYFINDER_SHUTDOWN_TIMEOUT": "-1s"}, want: []string{"WAYFINDER_SHUTDOWN_TIMEOUT"}},
		{name: "log level loud", env: map[string]string{"WAYFINDER_LOG_LEVEL": "loud"}, want: []string{"WAYFINDER_LOG_LEVEL"}},
		{name: "log format xml", env: map[string]string{"WAYFINDER_LOG_FORMAT": "xml"}, want: []string{"WAYFINDER_LOG_FORMAT"}},
		{name: "allow private maybe", env: map[string]string{"WAYFINDER_ALLOW_PRIVATE_NETWORKS": "maybe"}, want: []string{"WAYFINDER_ALLOW_PRIVATE_NETWORKS"}},
		{
			name: "every error is reported",
			env:  map[string]string{"WAYFINDER_ROLE": "x", "WAYFINDER_LOG_LEVEL": "loud"},
			args: []string{"-browser-capacity=0"},
			want: []string{"WAYFINDER_ROLE", "WAYFINDER_LOG_LEVEL", "WAYFINDER_BROWSER_CAPACITY"},
		},
		{name: "positional argument", args: []string{"serve"}, want: []string{"unexpected arguments: serve"}},
		{name: "positional arguments after flags", args: []string{"-role=api", "a", "b"}, want: []string{"unexpected arguments: a b"}},
		{name: "unknown flag", args: []string{"-no-such-flag"}, want: []string{"no-such-flag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load("wayfinder", tt.args, fakeEnv(tt.env))
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestSettingsAreComplete(t *testing.T) {
	t.Parallel()
	flags, envs := map[string]bool{}, map[string]bool{}
	for _, s := range Settings {
		t.Run(s.Flag, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, s.Help)
			require.NotEmpty(t, s.Env)
			require.NotNil(t, s.set)
			require.False(t, strings.HasPrefix(s.Flag, "-"))
		})
		require.False(t, flags[s.Flag], "flag %s declared twice", s.Flag)
		require.False(t, envs[s.Env], "env %s declared twice", s.Env)
		flags[s.Flag], envs[s.Env] = true, true
	}
}

// TestLoadS3: with -media-store=s3 the endpoint is resolved, the settings
// are checked and the credentials read from the environment or from files;
// no error echoes a credential.
func TestLoadS3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	idFile, secretFile, emptyFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret"), filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(idFile, []byte("AKIAFILE\n"), 0o600))
	require.NoError(t, os.WriteFile(secretFile, []byte("file-secret-value\n"), 0o600))
	require.NoError(t, os.WriteFile(emptyFile, nil, 0o600))
	base := map[string]string{
		"WAYFINDER_MEDIA_STORE": "s3", "WAYFINDER_S3_BUCKET": "shots",
		"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret-value",
	}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    S3 // checked when wantErr is ""
		wantErr string
	}{
		{name: "aws defaults", env: base, want: S3{Endpoint: "s3.us-east-1.amazonaws.com", Secure: true, Bucket: "shots",
			Region: "us-east-1", Prefix: "wayfinder", AccessKeyID: "AKIAENV", SecretAccessKey: "env-secret-value"}},
		{name: "minio over http, files win", args: []string{"-s3-endpoint", "http://minio:9000", "-s3-insecure=true", "-s3-path-style=true",
			"-s3-access-key-id-file", idFile, "-s3-secret-access-key-file", secretFile, "-s3-prefix", "/prod/wf/"},
			env: with("AWS_SESSION_TOKEN", "tok", "WAYFINDER_S3_REGION", "eu-west-3"),
			want: S3{Endpoint: "minio:9000", Bucket: "shots", Region: "eu-west-3", Prefix: "prod/wf", PathStyle: true, Insecure: true,
				AccessKeyIDFile: idFile, SecretAccessKeyFile: secretFile, AccessKeyID: "AKIAFILE", SecretAccessKey: "file-secret-value", SessionToken: "tok"}},
		{name: "bare host is TLS, no prefix", args: []string{"-s3-prefix=/"}, env: with("WAYFINDER_S3_ENDPOINT", "s3.example.com:8443"),
			want: S3{Endpoint: "s3.example.com:8443", Secure: true, Bucket: "shots", Region: "us-east-1",
				AccessKeyID: "AKIAENV", SecretAccessKey: "env-secret-value"}},
		{name: "bucket required", env: with("WAYFINDER_S3_BUCKET", ""), wantErr: "WAYFINDER_S3_BUCKET: required"},
		{name: "bad bucket", env: with("WAYFINDER_S3_BUCKET", "Shots_1"), wantErr: "is not a bucket name"},
		{name: "http needs insecure", env: with("WAYFINDER_S3_ENDPOINT", "http://minio:9000"), wantErr: "set WAYFINDER_S3_INSECURE=true"},
		{name: "https contradicts insecure", env: with("WAYFINDER_S3_ENDPOINT", "https://minio:9000", "WAYFINDER_S3_INSECURE", "true"), wantErr: "contradicts"},
		{name: "endpoint with a path", env: with("WAYFINDER_S3_ENDPOINT", "https://minio:9000/bucket"), wantErr: "WAYFINDER_S3_ENDPOINT: must be host[:port]"},
		{name: "endpoint with a user", env: with("WAYFINDER_S3_ENDPOINT", "https://AKIAENV:pw@minio"), wantErr: "WAYFINDER_S3_ENDPOINT"},
		{name: "ftp endpoint", env: with("WAYFINDER_S3_ENDPOINT", "ftp://minio"), wantErr: "WAYFINDER_S3_ENDPOINT"},
		{name: "bad region", env: with("WAYFINDER_S3_REGION", "US East"), wantErr: "WAYFINDER_S3_REGION"},
		{name: "bad prefix", env: with("WAYFINDER_S3_PREFIX", "a/../b"), wantErr: "WAYFINDER_S3_PREFIX"},
		{name: "no secret", env: with("AWS_SECRET_ACCESS_KEY", ""), wantErr: "AWS_SECRET_ACCESS_KEY or WAYFINDER_S3_SECRET_ACCESS_KEY_FILE: required"},
		{name: "missing file", env: with("WAYFINDER_S3_ACCESS_KEY_ID_FILE", filepath.Join(dir, "nope")), wantErr: "no such file"},
		{name: "empty file", env: with("WAYFINDER_S3_SECRET_ACCESS_KEY_FILE", emptyFile), wantErr: "is empty"},
		{name: "bad store", env: with("WAYFINDER_MEDIA_STORE", "gcs"), wantErr: "must be postgres or s3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load("wayfinder", tc.args, fakeEnv(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				for _, secret := range []string{"env-secret-value", "file-secret-value", "pw@"} {
					require.NotContains(t, err.Error(), secret)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, MediaS3, c.MediaStore)
			require.Equal(t, tc.want, c.S3)
		})
	}

	// Printing or logging the settings leaves the credentials out.
	c, err := Load("wayfinder", nil, fakeEnv(base))
	require.NoError(t, err)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("settings", "s3", c.S3)
	for _, out := range []string{fmt.Sprint(c.S3), fmt.Sprintf("%+v", c), logged.String()} {
		require.Contains(t, out, "shots")
		require.NotContains(t, out, "env-secret-value")
		require.NotContains(t, out, "AKIAENV")
	}

	// With the Postgres store, the S3 settings are not checked and no
	// credential is read.
	c, err = Load("wayfinder", nil, fakeEnv(map[string]string{"WAYFINDER_S3_BUCKET": "Bad_Name", "AWS_SECRET_ACCESS_KEY": "x"}))
	require.NoError(t, err)
	require.Equal(t, MediaPostgres, c.MediaStore)
	require.Empty(t, c.S3.SecretAccessKey)
}
