package api

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// CredentialService implements wayfinder.v1.CredentialService.
type CredentialService struct {
	wfv1.UnimplementedCredentialServiceServer
	store   *store.Store
	keyring *secrets.Keyring
	log     *slog.Logger
}

// NewCredentialService returns the credential service; values are sealed
// with keyring's primary key.
func NewCredentialService(st *store.Store, keyring *secrets.Keyring, log *slog.Logger) *CredentialService {
	return &CredentialService{store: st, keyring: keyring, log: log}
}

var (
	credentialNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
	fieldNamePattern      = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
)

// credentialFields lists each type's required and optional fields; nil
// for GENERIC (any fields).
var credentialFields = map[wfv1.CredentialType]struct{ required, optional []string }{
	wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY:                   {[]string{"api_key"}, []string{"header_name", "prefix"}},
	wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY_WITH_ENDPOINT:     {[]string{"api_key", "endpoint"}, nil},
	wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH:                {[]string{"username", "password"}, nil},
	wfv1.CredentialType_CREDENTIAL_TYPE_OAUTH2_CLIENT_CREDENTIALS: {[]string{"client_id", "client_secret", "token_url"}, []string{"scope"}},
}

// checkValues validates a credential's values against its type. Values are
// secret: messages name fields, never values.
func checkValues(v *fault.Violations, typ wfv1.CredentialType, values map[string]string) {
	if len(values) == 0 {
		v.Add("values", "at least one field is required")
		return
	}
	if len(values) > 32 {
		v.Add("values", "at most 32 fields")
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	}) {
		if !fieldNamePattern.MatchString(k) {
			v.Add("values", "field name %q must match %s", truncateName(k), fieldNamePattern)
		}
		if len(values[k]) > 16<<10 {
			v.Add("values["+k+"]", "at most 16 KiB")
		}
	}
	spec, typed := credentialFields[typ]
	if !typed {
		return
	}
	for _, f := range spec.required {
		if values[f] == "" {
			v.Add("values["+f+"]", "required for %s", typ)
		}
	}
	for k := range values {
		if !slices.Contains(spec.required, k) && !slices.Contains(spec.optional, k) {
			v.Add("values["+k+"]", "not a field of %s (fields: %s)", typ, strings.Join(append(slices.Clone(spec.required), spec.optional...), ", "))
		}
	}
	if u := values["token_url"]; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		v.Add("values[token_url]", "must be an absolute http(s) URL")
	}
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func checkCredentialName(v *fault.Violations, name string) {
	if !credentialNamePattern.MatchString(name) {
		v.Add("name", "must match %s", credentialNamePattern)
	}
}

// CreateCredential implements wayfinder.v1.CredentialService.
func (s *CredentialService) CreateCredential(ctx context.Context, req *wfv1.CreateCredentialRequest) (*wfv1.Credential, error) {
	var v fault.Violations
	checkCredentialName(&v, req.GetName())
	if _, ok := wfv1.CredentialType_name[int32(req.GetType())]; !ok || req.GetType() == wfv1.CredentialType_CREDENTIAL_TYPE_UNSPECIFIED {
		v.Add("type", "required: one of API_KEY, API_KEY_WITH_ENDPOINT, BASIC_AUTH, OAUTH2_CLIENT_CREDENTIALS, GENERIC")
	} else {
		checkValues(&v, req.GetType(), req.GetValues())
	}
	if len(req.GetDescription()) > 1000 {
		v.Add("description", "at most 1000 characters")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	c, err := s.store.CreateCredential(ctx, s.keyring, store.NewCredential{
		Tenant: tenant.ID(ctx), Name: req.GetName(), Type: req.GetType(),
		Description: req.GetDescription(), Values: req.GetValues(),
	})
	if err != nil {
		return nil, err
	}
	recordAudit(ctx, s.store, s.log, store.Audit{Kind: store.AuditCredentialCreated, Subject: c.Name,
		Details: map[string]any{"type": c.Type.String(), "fields": strings.Join(c.Fields, ",")}})
	return c, nil
}

// ListCredentials implements wayfinder.v1.CredentialService.
func (s *CredentialService) ListCredentials(ctx context.Context, req *wfv1.ListCredentialsRequest) (*wfv1.ListCredentialsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if err := v.Err(); err != nil {
		return nil, err
	}
	cs, next, err := s.store.ListCredentials(ctx, tenant.ID(ctx), req.GetPageToken(), size)
	if err != nil {
		return nil, err
	}
	return &wfv1.ListCredentialsResponse{Credentials: cs, NextPageToken: next}, nil
}

// GetCredential implements wayfinder.v1.CredentialService.
func (s *CredentialService) GetCredential(ctx context.Context, req *wfv1.GetCredentialRequest) (*wfv1.Credential, error) {
	if err := s.checkName(req.GetName()); err != nil {
		return nil, err
	}
	return s.store.GetCredential(ctx, tenant.ID(ctx), req.GetName())
}

// RotateCredential implements wayfinder.v1.CredentialService.
func (s *CredentialService) RotateCredential(ctx context.Context, req *wfv1.RotateCredentialRequest) (*wfv1.Credential, error) {
	if err := s.checkName(req.GetName()); err != nil {
		return nil, err
	}
	cur, err := s.store.GetCredential(ctx, tenant.ID(ctx), req.GetName())
	if err != nil {
		return nil, err
	}
	var v fault.Violations
	checkValues(&v, cur.Type, req.GetValues())
	if err := v.Err(); err != nil {
		return nil, err
	}
	c, err := s.store.RotateCredential(ctx, s.keyring, tenant.ID(ctx), req.GetName(), req.GetValues())
	if err != nil {
		return nil, err
	}
	recordAudit(ctx, s.store, s.log, store.Audit{Kind: store.AuditCredentialRotated, Subject: c.Name,
		Details: map[string]any{"version": c.Version}})
	return c, nil
}

// DeleteCredential implements wayfinder.v1.CredentialService.
func (s *CredentialService) DeleteCredential(ctx context.Context, req *wfv1.DeleteCredentialRequest) (*emptypb.Empty, error) {
	if err := s.checkName(req.GetName()); err != nil {
		return nil, err
	}
	if err := s.store.DeleteCredential(ctx, tenant.ID(ctx), req.GetName()); err != nil {
		return nil, err
	}
	recordAudit(ctx, s.store, s.log, store.Audit{Kind: store.AuditCredentialDeleted, Subject: req.GetName()})
	return &emptypb.Empty{}, nil
}

func (s *CredentialService) checkName(name string) error {
	var v fault.Violations
	checkCredentialName(&v, name)
	if err := v.Err(); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	return nil
}
