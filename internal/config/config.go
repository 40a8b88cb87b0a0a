// Package config defines the server's settings. Each setting is declared
// once, in Settings, with its flag, its WAYFINDER_* environment variable, its
// default and its documentation; flags win over the environment, which wins
// over defaults. The README's configuration table lists the same settings
// (a test keeps the two in step).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Role selects which parts of the service a process runs.
type Role string

// The roles.
const (
	RoleAll    Role = "all"
	RoleAPI    Role = "api"
	RoleWorker Role = "worker"
)

// Config is the server configuration.
type Config struct {
	GRPCAddr                  string
	HTTPAddr                  string
	DatabaseURL               string
	DataDir                   string
	PGBin                     string
	PGUser                    string
	Role                      Role
	Chromium                  string
	BrowserCapacity           int
	BrowserContextsPerProcess int
	BrowserProcessPerRun      bool
	BrowserRecycleAfter       int
	BrowserMemoryLimit        int64
	AllowPrivateNetworks      bool
	RunTimeout                time.Duration
	ShutdownTimeout           time.Duration
	// TakeoverIdle ends a person's takeover of a run's browser after this
	// long without input.
	TakeoverIdle time.Duration
	LogLevel     string
	LogFormat    string
	// ModelProvider is the default controller provider: "auto" picks the
	// first vendor with an API key (Anthropic, OpenAI, Gemini), else the
	// offline step controller.
	ModelProvider string
	// Model and JudgeModel are the default model names ("" = the
	// provider's default).
	Model      string
	JudgeModel string
	// BaseURLs are server-level API endpoints per provider, which receive
	// the server's API keys (a gateway, a proxy, a local server).
	BaseURLs map[string]string
	// APIKeys are the vendors' keys per provider, read from the vendors'
	// standard environment variables only (never flags, which other users
	// of the machine can see).
	APIKeys map[string]string
	// PricesFile is a JSON price table merged over the built-in one.
	PricesFile string
	// AdminKey is the bootstrap admin API key (WAYFINDER_ADMIN_KEY, env
	// only). Empty: local single-user mode on loopback, no API keys.
	AdminKey string
	// EncryptionKeys is the keyring for credentials and run secrets, as
	// "id:key" entries, the first primary (WAYFINDER_ENCRYPTION_KEYS, env
	// only).
	EncryptionKeys string
	// EncryptionKeyFile holds the same list in a file.
	EncryptionKeyFile string
	// SiteProfilesDir holds site profiles (*.json) for every tenant.
	SiteProfilesDir string
	// DomainRateLimit is the default most browser actions per minute on
	// one domain (0: none).
	DomainRateLimit int
	// CallbackHost is the host the CDP endpoint handed to auth callback
	// webhooks is advertised on.
	CallbackHost string
	// MediaStore is where media bytes (screenshots) go: MediaPostgres or
	// MediaS3.
	MediaStore string
	// S3 configures the object store when MediaStore is MediaS3.
	S3 S3
}

// The media stores.
const (
	MediaPostgres = "postgres"
	MediaS3       = "s3"
)

// S3 is the S3-compatible object store for media. Load checks it only when
// the media store is MediaS3, and only then reads the credentials.
type S3 struct {
	// Endpoint is the server's host[:port]; Secure selects TLS. Load
	// derives both from the -s3-endpoint URL or host and -s3-insecure.
	Endpoint string
	Secure   bool
	Bucket   string
	Region   string
	// Prefix starts every key (no leading or trailing slash; "" for none).
	Prefix    string
	PathStyle bool
	Insecure  bool
	// AccessKeyIDFile and SecretAccessKeyFile hold the credentials; when
	// empty they come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	AccessKeyIDFile     string
	SecretAccessKeyFile string
	// AccessKeyID, SecretAccessKey and SessionToken (AWS_SESSION_TOKEN,
	// optional) are the credentials Load read. Never logged.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// Secret environment variables, read from the environment only (never
// flags, which other users of the machine can see).
const (
	AdminKeyEnv       = "WAYFINDER_ADMIN_KEY"
	EncryptionKeysEnv = "WAYFINDER_ENCRYPTION_KEYS"
	// The object store's credentials, read with -media-store=s3 when no
	// file names them.
	S3AccessKeyIDEnv     = "AWS_ACCESS_KEY_ID"
	S3SecretAccessKeyEnv = "AWS_SECRET_ACCESS_KEY"
	S3SessionTokenEnv    = "AWS_SESSION_TOKEN"
)

// APIKeyEnv names the environment variables the vendors' API keys are read
// from, per provider; the first one set wins.
var APIKeyEnv = map[string][]string{
	"anthropic": {"ANTHROPIC_API_KEY"},
	"openai":    {"OPENAI_API_KEY"},
	"gemini":    {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
}

// Setting describes one configuration setting.
type Setting struct {
	Flag    string
	Env     string
	Default string
	Help    string
	set     func(c *Config, v string) error
}

// Settings lists every setting, in documentation order.
var Settings = []Setting{
	{"grpc-addr", "WAYFINDER_GRPC_ADDR", "127.0.0.1:9090", "gRPC listen address.",
		func(c *Config, v string) error { c.GRPCAddr = v; return nil }},
	{"http-addr", "WAYFINDER_HTTP_ADDR", "127.0.0.1:8080", "HTTP listen address: REST gateway, /healthz, /readyz, /metrics, /openapi.json.",
		func(c *Config, v string) error { c.HTTPAddr = v; return nil }},
	{"database-url", "DATABASE_URL", "", "Postgres connection URL. Empty: start a managed local Postgres in the data dir.",
		func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{"data-dir", "WAYFINDER_DATA_DIR", "(see help)", "Directory for the managed Postgres and browser profiles. Default $XDG_DATA_HOME/wayfinder (~/.local/share/wayfinder), or /var/lib/wayfinder when running as root.",
		func(c *Config, v string) error { c.DataDir = v; return nil }},
	{"pg-bin", "WAYFINDER_PG_BIN", "", "Directory holding initdb and postgres for the managed Postgres. Empty: search PATH and /usr/lib/postgresql/*/bin.",
		func(c *Config, v string) error { c.PGBin = v; return nil }},
	{"pg-user", "WAYFINDER_PG_USER", "postgres", "OS user that runs the managed Postgres when the server runs as root.",
		func(c *Config, v string) error { c.PGUser = v; return nil }},
	{"role", "WAYFINDER_ROLE", "all", "Parts to run: all, api (serve requests only) or worker (execute runs only).",
		func(c *Config, v string) error {
			switch r := Role(v); r {
			case RoleAll, RoleAPI, RoleWorker:
				c.Role = r
				return nil
			}
			return fmt.Errorf("must be all, api or worker")
		}},
	{"chromium", "WAYFINDER_CHROMIUM", "", "Chromium binary. Empty: chromium, chromium-browser, google-chrome-stable or google-chrome on PATH.",
		func(c *Config, v string) error { c.Chromium = v; return nil }},
	{"browser-capacity", "WAYFINDER_BROWSER_CAPACITY", "2", "Runs executed at once by this replica (one isolated browser context each).",
		func(c *Config, v string) error { return parseInt(&c.BrowserCapacity, v, 1, 256) }},
	{"browser-contexts-per-process", "WAYFINDER_BROWSER_CONTEXTS_PER_PROCESS", "4", "Runs (isolated contexts) one Chromium process hosts at most; the replica keeps ceil(capacity / this) processes warm. An idle process holds 170-290 MB and a context with a typical page ~65-75 MB (PSS), so sharing saves memory; a crash fails the runs of its process, which carry on in new contexts.",
		func(c *Config, v string) error { return parseInt(&c.BrowserContextsPerProcess, v, 1, 64) }},
	{"browser-process-per-run", "WAYFINDER_BROWSER_PROCESS_PER_RUN", "false", "Give every run a fresh Chromium process of its own, killed when the run ends (strongest isolation; a process and a launch per run).",
		func(c *Config, v string) error { return parseBool(&c.BrowserProcessPerRun, v) }},
	{"browser-recycle-after", "WAYFINDER_BROWSER_RECYCLE_AFTER", "100", "Runs a Chromium process serves before it is replaced (it takes no new runs and ends with its last one).",
		func(c *Config, v string) error { return parseInt(&c.BrowserRecycleAfter, v, 1, 1_000_000) }},
	{"browser-memory-limit", "WAYFINDER_BROWSER_MEMORY_LIMIT", "2GiB", "Replace a Chromium process whose process group holds more memory (PSS) than this, like 1GiB or 1500MiB; it takes no new runs and ends with its last one.",
		func(c *Config, v string) error { return parseBytes(&c.BrowserMemoryLimit, v, 64<<20) }},
	{"allow-private-networks", "WAYFINDER_ALLOW_PRIVATE_NETWORKS", "false", "Let every run reach private, loopback and link-local addresses. Otherwise a run reaches them only when its allowed_domains name them.",
		func(c *Config, v string) error { return parseBool(&c.AllowPrivateNetworks, v) }},
	{"run-timeout", "WAYFINDER_RUN_TIMEOUT", "10m", "Default and maximum wall-clock time of a run. Jobs of a lost worker are rescued after this plus 15s.",
		func(c *Config, v string) error { return parseDuration(&c.RunTimeout, v, time.Second, 24*time.Hour) }},
	{"shutdown-timeout", "WAYFINDER_SHUTDOWN_TIMEOUT", "30s", "On SIGTERM, how long running runs may finish before they are handed back to the queue.",
		func(c *Config, v string) error { return parseDuration(&c.ShutdownTimeout, v, 0, time.Hour) }},
	{"takeover-idle", "WAYFINDER_TAKEOVER_IDLE", "5m", "A person's takeover of a run's browser ends (the run goes on) after this long without input.",
		func(c *Config, v string) error { return parseDuration(&c.TakeoverIdle, v, time.Second, 24*time.Hour) }},
	{"log-level", "WAYFINDER_LOG_LEVEL", "info", "debug, info, warn or error.",
		func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return fmt.Errorf("must be debug, info, warn or error")
		}},
	{"log-format", "WAYFINDER_LOG_FORMAT", "json", "json or text.",
		func(c *Config, v string) error {
			if v != "json" && v != "text" {
				return fmt.Errorf("must be json or text")
			}
			c.LogFormat = v
			return nil
		}},
	{"model-provider", "WAYFINDER_MODEL_PROVIDER", "auto", "Default controller (and judge) provider for runs that name none: anthropic, openai, gemini, steps (the offline step controller) or auto (the first of Anthropic, OpenAI, Gemini whose API key is set, else steps). API keys come from ANTHROPIC_API_KEY, OPENAI_API_KEY and GEMINI_API_KEY (or GOOGLE_API_KEY).",
		func(c *Config, v string) error {
			switch v {
			case "auto", "anthropic", "openai", "gemini", "steps":
				c.ModelProvider = v
				return nil
			}
			return fmt.Errorf("must be auto, anthropic, openai, gemini or steps")
		}},
	{"model", "WAYFINDER_MODEL", "", "Default controller model name. Empty: the provider's default (claude-sonnet-4-5, gpt-4.1, gemini-2.5-flash).",
		func(c *Config, v string) error { c.Model = v; return nil }},
	{"judge-model", "WAYFINDER_JUDGE_MODEL", "", "Default judge model name (same provider as the controller). Empty: the controller's model.",
		func(c *Config, v string) error { c.JudgeModel = v; return nil }},
	{"anthropic-base-url", "WAYFINDER_ANTHROPIC_BASE_URL", "", "Anthropic API endpoint that receives the server's key (a gateway or proxy). Empty: Anthropic's.",
		func(c *Config, v string) error { return setBaseURL(c, "anthropic", v) }},
	{"openai-base-url", "WAYFINDER_OPENAI_BASE_URL", "", "OpenAI-compatible endpoint that receives the server's key (a gateway, vLLM, Ollama, LM Studio). Empty: OpenAI's.",
		func(c *Config, v string) error { return setBaseURL(c, "openai", v) }},
	{"gemini-base-url", "WAYFINDER_GEMINI_BASE_URL", "", "Gemini API endpoint that receives the server's key. Empty: Google's.",
		func(c *Config, v string) error { return setBaseURL(c, "gemini", v) }},
	{"prices-file", "WAYFINDER_PRICES_FILE", "", "JSON price table (USD per million tokens per provider and model) merged over the built-in one; see docs/api.md.",
		func(c *Config, v string) error { c.PricesFile = v; return nil }},
	{"encryption-key-file", "WAYFINDER_ENCRYPTION_KEY_FILE", "", "File of encryption keys for credentials and run secrets: lines \"id:key\" (32 bytes, hex or base64), the first one encrypts, the others still decrypt. Or set WAYFINDER_ENCRYPTION_KEYS (same format, comma-separated). Empty: with the managed Postgres, a key generated in the data dir; with DATABASE_URL, required.",
		func(c *Config, v string) error { c.EncryptionKeyFile = v; return nil }},
	{"site-profiles-dir", "WAYFINDER_SITE_PROFILES_DIR", "", "Directory of site profiles (*.json, the SiteProfile JSON) that apply to every tenant. Empty: none.",
		func(c *Config, v string) error { c.SiteProfilesDir = v; return nil }},
	{"domain-rate-limit", "WAYFINDER_DOMAIN_RATE_LIMIT", "0", "Default most browser actions per minute on one domain, per worker process, spaced with jitter (a run or site profile may set its own). 0: no limit.",
		func(c *Config, v string) error { return parseInt(&c.DomainRateLimit, v, 0, 6000) }},
	{"callback-host", "WAYFINDER_CALLBACK_HOST", "127.0.0.1", "Host (name or address) the short-lived CDP endpoint given to auth callback webhooks listens on and is advertised with.",
		func(c *Config, v string) error { c.CallbackHost = v; return nil }},
	{"media-store", "WAYFINDER_MEDIA_STORE", "postgres", "Where screenshots' bytes go: postgres (the media table) or s3 (an S3-compatible bucket; the media row keeps the object's key). With s3, a screenshot whose upload fails is kept in Postgres instead (counted by wayfinder_media_fallback_total), so an object-store outage never fails a run.",
		func(c *Config, v string) error {
			if v != MediaPostgres && v != MediaS3 {
				return fmt.Errorf("must be postgres or s3")
			}
			c.MediaStore = v
			return nil
		}},
	{"s3-endpoint", "WAYFINDER_S3_ENDPOINT", "", "S3 endpoint: host[:port] or an https:// (or, with -s3-insecure, http://) URL. Empty: AWS, s3.<region>.amazonaws.com.",
		func(c *Config, v string) error { c.S3.Endpoint = v; return nil }},
	{"s3-bucket", "WAYFINDER_S3_BUCKET", "", "Bucket for screenshots; it must exist. Required with -media-store=s3.",
		func(c *Config, v string) error { c.S3.Bucket = v; return nil }},
	{"s3-region", "WAYFINDER_S3_REGION", "us-east-1", "The bucket's region.",
		func(c *Config, v string) error { c.S3.Region = v; return nil }},
	{"s3-prefix", "WAYFINDER_S3_PREFIX", "wayfinder", "Key prefix: a screenshot is the object <prefix>/runs/<run id>/<sha256>.<ext>; / for none.",
		func(c *Config, v string) error { c.S3.Prefix = v; return nil }},
	{"s3-path-style", "WAYFINDER_S3_PATH_STYLE", "false", "Address the bucket as a path (endpoint/bucket/key), as MinIO and most self-hosted stores need. false: virtual-hosted (bucket.endpoint) where the endpoint is AWS.",
		func(c *Config, v string) error { return parseBool(&c.S3.PathStyle, v) }},
	{"s3-insecure", "WAYFINDER_S3_INSECURE", "false", "Talk plain HTTP (no TLS) to the S3 endpoint, e.g. a MinIO on a private network. An http:// endpoint needs it.",
		func(c *Config, v string) error { return parseBool(&c.S3.Insecure, v) }},
	{"s3-access-key-id-file", "WAYFINDER_S3_ACCESS_KEY_ID_FILE", "", "File holding the S3 access key ID. Empty: AWS_ACCESS_KEY_ID (env only).",
		func(c *Config, v string) error { c.S3.AccessKeyIDFile = v; return nil }},
	{"s3-secret-access-key-file", "WAYFINDER_S3_SECRET_ACCESS_KEY_FILE", "", "File holding the S3 secret access key. Empty: AWS_SECRET_ACCESS_KEY (env only). AWS_SESSION_TOKEN is sent when set.",
		func(c *Config, v string) error { c.S3.SecretAccessKeyFile = v; return nil }},
}

func setBaseURL(c *Config, provider, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http(s) URL")
	}
	if c.BaseURLs == nil {
		c.BaseURLs = map[string]string{}
	}
	c.BaseURLs[provider] = v
	return nil
}

// Load reads the configuration from args (flags) and getenv.
func Load(name string, args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	values := make([]*string, len(Settings))
	for i, s := range Settings {
		values[i] = fs.String(s.Flag, "", s.Help+" (env "+s.Env+", default "+s.Default+")")
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var c Config
	var errs []error
	for i, s := range Settings {
		// A flag given explicitly wins even when empty (-database-url=
		// forces the managed Postgres over a DATABASE_URL in the env).
		v, source := *values[i], "-"+s.Flag
		if !set[s.Flag] {
			v, source = getenv(s.Env), s.Env
		}
		if v == "" && (source != "-"+s.Flag || s.Default != "") {
			v, source = s.Default, "default"
		}
		if s.Flag == "data-dir" && source == "default" {
			v = defaultDataDir(getenv)
		}
		if err := s.set(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q (%s): %w", s.Env, v, source, err))
		}
	}
	c.AdminKey = strings.TrimSpace(getenv(AdminKeyEnv))
	if c.AdminKey != "" && len(c.AdminKey) < 32 {
		errs = append(errs, fmt.Errorf("%s: must be at least 32 characters (use a random key, e.g. openssl rand -hex 32)", AdminKeyEnv))
	}
	c.EncryptionKeys = strings.TrimSpace(getenv(EncryptionKeysEnv))
	for provider, names := range APIKeyEnv {
		for _, name := range names {
			if v := strings.TrimSpace(getenv(name)); v != "" {
				if c.APIKeys == nil {
					c.APIKeys = map[string]string{}
				}
				c.APIKeys[provider] = v
				break
			}
		}
	}
	if c.MediaStore == MediaS3 {
		errs = append(errs, loadS3(&c.S3, getenv)...)
	}
	return c, errors.Join(errs...)
}

// String describes s without its credentials, so a %v or a log line
// cannot leak them.
func (s S3) String() string {
	return fmt.Sprintf("{endpoint:%s secure:%t bucket:%s region:%s prefix:%s path_style:%t credentials:%s}",
		s.Endpoint, s.Secure, s.Bucket, s.Region, s.Prefix, s.PathStyle,
		map[bool]string{true: "set", false: "unset"}[s.AccessKeyID != "" && s.SecretAccessKey != ""])
}

// LogValue is s for log/slog, without its credentials.
func (s S3) LogValue() slog.Value { return slog.StringValue(s.String()) }

// bucketName is an S3 bucket name: 3-63 lower-case letters, digits, dots
// and hyphens, starting and ending with a letter or digit.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// loadS3 checks the object store settings, resolves the endpoint and reads
// the credentials. Errors name settings and files, never their secrets.
func loadS3(s *S3, getenv func(string) string) []error {
	var errs []error
	bad := func(env, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{env}, args...)...))
	}
	if s.Bucket == "" {
		bad("WAYFINDER_S3_BUCKET", "required with WAYFINDER_MEDIA_STORE=s3")
	} else if !bucketName.MatchString(s.Bucket) || strings.Contains(s.Bucket, "..") {
		bad("WAYFINDER_S3_BUCKET", "%q is not a bucket name (3-63 lower-case letters, digits, dots and hyphens)", s.Bucket)
	}
	if s.Region == "" || strings.ContainsFunc(s.Region, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}) {
		bad("WAYFINDER_S3_REGION", "%q is not a region, like us-east-1", s.Region)
	}
	s.Prefix = strings.Trim(s.Prefix, "/")
	if strings.ContainsFunc(s.Prefix, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) ||
		slices.Contains(strings.Split(s.Prefix, "/"), "..") || strings.Contains(s.Prefix, "//") || len(s.Prefix) > 256 {
		bad("WAYFINDER_S3_PREFIX", "must be a key prefix of at most 256 characters without control characters, backslashes, empty or .. segments")
	}
	switch host, secure, err := s3Endpoint(s.Endpoint, s.Region, s.Insecure); {
	case err != nil:
		bad("WAYFINDER_S3_ENDPOINT", "%v", err)
	default:
		s.Endpoint, s.Secure = host, secure
	}
	s.AccessKeyID, errs = readSecret(s.AccessKeyIDFile, "WAYFINDER_S3_ACCESS_KEY_ID_FILE", S3AccessKeyIDEnv, getenv, errs)
	s.SecretAccessKey, errs = readSecret(s.SecretAccessKeyFile, "WAYFINDER_S3_SECRET_ACCESS_KEY_FILE", S3SecretAccessKeyEnv, getenv, errs)
	s.SessionToken = strings.TrimSpace(getenv(S3SessionTokenEnv))
	return errs
}

// s3Endpoint resolves the endpoint setting to host[:port] and whether to
// use TLS.
func s3Endpoint(v, region string, insecure bool) (host string, secure bool, err error) {
	if v == "" {
		if insecure {
			return "", false, fmt.Errorf("AWS needs TLS: leave WAYFINDER_S3_INSECURE false or name an endpoint")
		}
		return "s3." + region + ".amazonaws.com", true, nil
	}
	if !strings.Contains(v, "://") {
		v = map[bool]string{true: "http://", false: "https://"}[insecure] + v
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false, fmt.Errorf("must be host[:port] or an http(s) URL with no path, user or query")
	}
	switch u.Scheme {
	case "https":
		if insecure {
			return "", false, fmt.Errorf("an https:// endpoint contradicts WAYFINDER_S3_INSECURE=true")
		}
		return u.Host, true, nil
	case "http":
		if !insecure {
			return "", false, fmt.Errorf("an http:// endpoint sends screenshots unencrypted: set WAYFINDER_S3_INSECURE=true to allow it")
		}
		return u.Host, false, nil
	}
	return "", false, fmt.Errorf("must be host[:port] or an http(s) URL")
}

// readSecret reads a credential from file when it is named, else from the
// environment variable env.
func readSecret(file, fileEnv, env string, getenv func(string) string, errs []error) (string, []error) {
	if file == "" {
		v := strings.TrimSpace(getenv(env))
		if v == "" {
			errs = append(errs, fmt.Errorf("%s or %s: required with WAYFINDER_MEDIA_STORE=s3", env, fileEnv))
		}
		return v, errs
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named below; the error adds nothing else
		}
		return "", append(errs, fmt.Errorf("%s: read %s: %w", fileEnv, file, err))
	}
	v := strings.TrimSpace(string(raw))
	if v == "" {
		errs = append(errs, fmt.Errorf("%s: %s is empty", fileEnv, file))
	}
	return v, errs
}

func defaultDataDir(getenv func(string) string) string {
	if os.Geteuid() == 0 {
		// Root's home is usually closed to the unprivileged user that runs
		// the managed Postgres.
		return "/var/lib/wayfinder"
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "wayfinder")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "wayfinder")
	}
	return filepath.Join(os.TempDir(), "wayfinder")
}

func parseInt(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

func parseBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	*dst = b
	return nil
}

// parseBytes reads a size such as 2GiB, 1500MiB, 1GB or 1048576 (bytes).
func parseBytes(dst *int64, v string, lo int64) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := strings.TrimSpace(v), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f*float64(mult) < float64(lo) || f*float64(mult) > 1<<50 {
		return fmt.Errorf("must be a size of at least %dMiB, like 1GiB or 1500MiB", lo>>20)
	}
	*dst = int64(f * float64(mult))
	return nil
}

func parseDuration(dst *time.Duration, v string, lo, hi time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return fmt.Errorf("must be a duration from %s to %s, like 90s or 10m", lo, hi)
	}
	*dst = d
	return nil
}
