package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

const testAdminKey = "admin-key-for-tests-0123456789abcdef0123456789"

// as returns ctx carrying an API key.
func as(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

// tenantClients are the clients of one tenant's key.
type tenantClients struct {
	key   string
	runs  wfv1.RunServiceClient
	creds wfv1.CredentialServiceClient
	acc   wfv1.AccessServiceClient
	ctx   context.Context
}

func newTenant(t *testing.T, ctx context.Context, admin wfv1.AccessServiceClient, conn *grpc.ClientConn, id string) tenantClients {
	t.Helper()
	_, err := admin.CreateTenant(ctx, &wfv1.CreateTenantRequest{Tenant: &wfv1.Tenant{Id: id, DisplayName: "Tenant " + id}})
	require.NoError(t, err)
	k, err := admin.CreateApiKey(ctx, &wfv1.CreateApiKeyRequest{TenantId: id, Name: "ci"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(k.Secret, "wf_"))
	require.True(t, strings.HasPrefix(k.Secret, k.ApiKey.Prefix), "prefix %q of %q", k.ApiKey.Prefix, k.Secret)
	return tenantClients{key: k.Secret, runs: wfv1.NewRunServiceClient(conn), creds: wfv1.NewCredentialServiceClient(conn),
		acc: wfv1.NewAccessServiceClient(conn), ctx: as(context.Background(), k.Secret)}
}

// TestAPIKeys: with an admin key configured every call needs a key; tenant
// keys cannot administer; a revoked key stops working at once.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey})
	ctx := context.Background()
	admin := wfv1.NewAccessServiceClient(ts.conn)
	actx := as(ctx, testAdminKey)

	_, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{})
	requireCode(t, err, "Unauthenticated")
	_, err = ts.client.ListRuns(as(ctx, "wf_not-a-key"), &wfv1.ListRunsRequest{})
	requireCode(t, err, "Unauthenticated")
	base := "http://" + ts.addrs.HTTP
	require.Equal(t, http.StatusUnauthorized, restJSON(t, http.MethodGet, base+"/v1/runs", "", nil))

	who, err := admin.WhoAmI(actx, &wfv1.WhoAmIRequest{})
	require.NoError(t, err)
	require.Equal(t, "default", who.TenantId)
	require.True(t, who.Admin)
	require.False(t, who.LocalMode)

	a := newTenant(t, actx, admin, ts.conn, "acme")
	_, err = a.acc.CreateTenant(a.ctx, &wfv1.CreateTenantRequest{Tenant: &wfv1.Tenant{Id: "evil"}})
	requireCode(t, err, "PermissionDenied")
	_, err = a.acc.CreateApiKey(a.ctx, &wfv1.CreateApiKeyRequest{TenantId: "acme", Admin: true})
	requireCode(t, err, "PermissionDenied")
	who, err = a.acc.WhoAmI(a.ctx, &wfv1.WhoAmIRequest{})
	require.NoError(t, err)
	require.Equal(t, "acme", who.TenantId)
	require.False(t, who.Admin)

	// REST carries the key in the Authorization header.
	req, err := http.NewRequest(http.MethodGet, base+"/v1/whoami", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	keys, err := admin.ListApiKeys(actx, &wfv1.ListApiKeysRequest{TenantId: "acme"})
	require.NoError(t, err)
	require.Len(t, keys.ApiKeys, 1)
	raw, err := protojson.Marshal(keys)
	require.NoError(t, err)
	require.NotContains(t, string(raw), a.key, "a listed key shows the secret")

	_, err = admin.RevokeApiKey(actx, &wfv1.RevokeApiKeyRequest{TenantId: "acme", KeyId: keys.ApiKeys[0].Id})
	require.NoError(t, err)
	_, err = a.runs.ListRuns(a.ctx, &wfv1.ListRunsRequest{})
	requireCode(t, err, "Unauthenticated")

	evs, err := admin.ListAuditEvents(actx, &wfv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	var kinds []string
	for _, e := range evs.Events {
		kinds = append(kinds, e.Kind)
	}
	require.Subset(t, kinds, []string{"tenant.created"})
}

// TestTenantIsolation: one tenant can neither read nor affect another's
// runs, events, steps, prompt runs, media, credentials or audit log. Every
// RPC of the tenant-facing services must have a case here.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey})
	s := newSite(t)
	actx := as(context.Background(), testAdminKey)
	admin := wfv1.NewAccessServiceClient(ts.conn)
	a := newTenant(t, actx, admin, ts.conn, "tenant-a")
	b := newTenant(t, actx, admin, ts.conn, "tenant-b")

	// Tenant A: a finished run with steps, prompt runs and media, a
	// credential, audit events.
	run, err := a.runs.CreateRun(a.ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/"), RequestId: "shared-key"})
	require.NoError(t, err)
	require.Equal(t, "tenant-a", run.TenantId)
	finished := pollFinished(t, a.ctx, a.runs, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, finished.Status)
	require.NotEmpty(t, finished.FinalScreenshotMediaId)
	_, err = a.creds.CreateCredential(a.ctx, &wfv1.CreateCredentialRequest{Name: "app-login",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, Values: map[string]string{"username": "alice", "password": "pa55-A-secret"}})
	require.NoError(t, err)

	_, err = a.creds.CreateCredential(a.ctx, &wfv1.CreateCredentialRequest{Name: "a-only",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_GENERIC, Values: map[string]string{"token": "a-only-token"}})
	require.NoError(t, err)

	// The same idempotency key in tenant B makes B's own run.
	runB, err := b.runs.CreateRun(b.ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/"), RequestId: "shared-key"})
	require.NoError(t, err)
	require.NotEqual(t, run.Id, runB.Id, "B's idempotency key found A's run")
	pollFinished(t, b.ctx, b.runs, runB.Id)

	_, err = b.creds.CreateCredential(b.ctx, &wfv1.CreateCredentialRequest{Name: "app-login",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": "b-key-value"}})
	require.NoError(t, err, "B cannot use a name A uses")

	ctx := b.ctx
	cases := map[string]func() error{
		"/wayfinder.v1.RunService/CreateRun": func() error {
			// Covered above: B's request_id does not reach A's run.
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.RunService/GetRun": func() error {
			_, err := b.runs.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.Id})
			return err
		},
		"/wayfinder.v1.RunService/ListRuns": func() error {
			l, err := b.runs.ListRuns(ctx, &wfv1.ListRunsRequest{})
			require.NoError(t, err)
			for _, r := range l.Runs {
				require.NotEqual(t, run.Id, r.Id, "B lists A's run")
			}
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.RunService/CancelRun": func() error {
			_, err := b.runs.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id})
			return err
		},
		"/wayfinder.v1.RunService/StreamRunEvents": func() error {
			st, err := b.runs.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: run.Id})
			if err != nil {
				return err
			}
			_, err = st.Recv()
			return err
		},
		"/wayfinder.v1.RunService/ListSteps": func() error {
			_, err := b.runs.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
			return err
		},
		"/wayfinder.v1.RunService/ListPromptRuns": func() error {
			_, err := b.runs.ListPromptRuns(ctx, &wfv1.ListPromptRunsRequest{RunId: run.Id})
			return err
		},
		"/wayfinder.v1.RunService/GetMedia": func() error {
			_, err := b.runs.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: finished.FinalScreenshotMediaId})
			return err
		},
		"/wayfinder.v1.RunService/SubmitApproval": func() error {
			_, err := b.runs.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true})
			return err
		},
		"/wayfinder.v1.RunService/ListWebhookDeliveries": func() error {
			_, err := b.runs.ListWebhookDeliveries(ctx, &wfv1.ListWebhookDeliveriesRequest{RunId: run.Id})
			return err
		},
		"/wayfinder.v1.RunService/RedeliverWebhook": func() error {
			_, err := b.runs.RedeliverWebhook(ctx, &wfv1.RedeliverWebhookRequest{RunId: run.Id,
				DeliveryId: "00000000-0000-0000-0000-000000000000"})
			return err
		},
		"/wayfinder.v1.RunService/StreamEvents": func() error {
			// B's tenant stream replays the last minute: none of A's events.
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			st, err := b.runs.StreamEvents(sctx, &wfv1.StreamEventsRequest{AfterTime: timestamppb.New(time.Now().Add(-time.Minute))})
			require.NoError(t, err)
			for {
				ev, err := st.Recv()
				if err != nil {
					break // the deadline ends the stream
				}
				require.NotEqual(t, run.Id, ev.RunId, "B's stream carries A's events")
			}
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.RunService/RunAndWait": func() error {
			// RunAndWait creates the caller's own run, like CreateRun.
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.CredentialService/CreateCredential": func() error {
			// B's credential of the same name (made above) is B's own.
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.CredentialService/GetCredential": func() error {
			c, err := b.creds.GetCredential(ctx, &wfv1.GetCredentialRequest{Name: "app-login"})
			require.NoError(t, err)
			require.Equal(t, wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, c.Type, "B reads A's credential")
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.CredentialService/ListCredentials": func() error {
			l, err := b.creds.ListCredentials(ctx, &wfv1.ListCredentialsRequest{})
			require.NoError(t, err)
			require.Len(t, l.Credentials, 1)
			require.Equal(t, wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, l.Credentials[0].Type)
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.CredentialService/RotateCredential": func() error {
			_, err := b.creds.RotateCredential(ctx, &wfv1.RotateCredentialRequest{Name: "a-only",
				Values: map[string]string{"api_key": "x"}})
			return err
		},
		"/wayfinder.v1.CredentialService/DeleteCredential": func() error {
			_, err := b.creds.DeleteCredential(ctx, &wfv1.DeleteCredentialRequest{Name: "a-only"})
			return err
		},
		"/wayfinder.v1.AccessService/WhoAmI": func() error {
			w, err := b.acc.WhoAmI(ctx, &wfv1.WhoAmIRequest{})
			require.NoError(t, err)
			require.Equal(t, "tenant-b", w.TenantId)
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.AccessService/ListAuditEvents": func() error {
			l, err := b.acc.ListAuditEvents(ctx, &wfv1.ListAuditEventsRequest{})
			require.NoError(t, err)
			require.NotEmpty(t, l.Events, "B's own credential.created")
			for _, e := range l.Events {
				require.NotEqual(t, run.Id, e.RunId, "B sees A's run in its audit log")
				require.NotContains(t, e.Actor, "tenant-a")
			}
			l, err = b.acc.ListAuditEvents(ctx, &wfv1.ListAuditEventsRequest{RunId: run.Id})
			require.NoError(t, err)
			require.Empty(t, l.Events)
			return status.Error(codes.NotFound, "n/a")
		},
	}
	for _, m := range []string{"CreateTenant", "ListTenants", "UpdateTenant", "CreateApiKey", "ListApiKeys", "RevokeApiKey"} {
		cases["/wayfinder.v1.AccessService/"+m] = func() error {
			var err error
			switch m {
			case "CreateTenant":
				_, err = b.acc.CreateTenant(ctx, &wfv1.CreateTenantRequest{Tenant: &wfv1.Tenant{Id: "x"}})
			case "ListTenants":
				_, err = b.acc.ListTenants(ctx, &wfv1.ListTenantsRequest{})
			case "UpdateTenant":
				_, err = b.acc.UpdateTenant(ctx, &wfv1.UpdateTenantRequest{TenantId: "tenant-a", DisplayName: "pwned"})
			case "CreateApiKey":
				_, err = b.acc.CreateApiKey(ctx, &wfv1.CreateApiKeyRequest{TenantId: "tenant-a"})
			case "ListApiKeys":
				_, err = b.acc.ListApiKeys(ctx, &wfv1.ListApiKeysRequest{TenantId: "tenant-a"})
			case "RevokeApiKey":
				_, err = b.acc.RevokeApiKey(ctx, &wfv1.RevokeApiKeyRequest{TenantId: "tenant-a", KeyId: "00000000-0000-0000-0000-000000000000"})
			}
			requireCode(t, err, "PermissionDenied")
			return status.Error(codes.NotFound, "n/a")
		}
	}
	for name, extra := range isolationCases(t, ts, a.ctx, b.ctx) {
		cases[name] = extra
	}
	// A's completed run recorded a trace: B can neither see nor change it.
	traces := wfv1.NewTraceServiceClient(ts.conn)
	_, err = traces.GetTrace(a.ctx, &wfv1.GetTraceRequest{TraceId: run.Id})
	require.NoError(t, err, "A's run recorded a trace")
	cases["/wayfinder.v1.TraceService/GetTrace"] = func() error {
		_, err := traces.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: run.Id})
		return err
	}
	cases["/wayfinder.v1.TraceService/ListTraces"] = func() error {
		l, err := traces.ListTraces(ctx, &wfv1.ListTracesRequest{})
		require.NoError(t, err)
		for _, tr := range l.Traces {
			require.NotEqual(t, run.Id, tr.Id, "B lists A's trace")
		}
		return status.Error(codes.NotFound, "n/a")
	}
	cases["/wayfinder.v1.TraceService/PinTrace"] = func() error {
		_, err := traces.PinTrace(ctx, &wfv1.PinTraceRequest{TraceId: run.Id, Pinned: true})
		return err
	}
	cases["/wayfinder.v1.TraceService/DeleteTrace"] = func() error {
		_, err := traces.DeleteTrace(ctx, &wfv1.DeleteTraceRequest{TraceId: run.Id})
		return err
	}
	cases["/wayfinder.v1.TraceService/ExportTrace"] = func() error {
		_, err := traces.ExportTrace(ctx, &wfv1.ExportTraceRequest{TraceId: run.Id, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
		return err
	}

	// Every method of every tenant-facing service has a case.
	for _, sd := range []grpc.ServiceDesc{wfv1.RunService_ServiceDesc, wfv1.CredentialService_ServiceDesc,
		wfv1.AccessService_ServiceDesc, wfv1.SiteProfileService_ServiceDesc, wfv1.TraceService_ServiceDesc} {
		for _, m := range sd.Methods {
			name := "/" + sd.ServiceName + "/" + m.MethodName
			require.Contains(t, cases, name, "no isolation case for %s", name)
		}
		for _, m := range sd.Streams {
			name := "/" + sd.ServiceName + "/" + m.StreamName
			require.Contains(t, cases, name, "no isolation case for %s", name)
		}
	}
	for name, call := range cases {
		t.Run(strings.TrimPrefix(name, "/wayfinder.v1."), func(t *testing.T) {
			requireCode(t, call(), "NotFound")
		})
	}

	// Nothing B did changed A's things.
	tr, err := traces.GetTrace(a.ctx, &wfv1.GetTraceRequest{TraceId: run.Id})
	require.NoError(t, err, "B deleted A's trace")
	require.False(t, tr.Pinned, "B pinned A's trace")
	got, err := a.runs.GetRun(a.ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, got.Status)
	require.False(t, got.CancelRequested)
	c, err := a.creds.GetCredential(a.ctx, &wfv1.GetCredentialRequest{Name: "app-login"})
	require.NoError(t, err)
	require.Equal(t, wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, c.Type)
	require.Equal(t, int32(1), c.Version)
	c, err = a.creds.GetCredential(a.ctx, &wfv1.GetCredentialRequest{Name: "a-only"})
	require.NoError(t, err, "B deleted A's credential")
	require.Equal(t, int32(1), c.Version, "B rotated A's credential")
	tenants, err := admin.ListTenants(actx, &wfv1.ListTenantsRequest{})
	require.NoError(t, err)
	for _, tn := range tenants.Tenants {
		require.NotEqual(t, "pwned", tn.DisplayName)
	}
}

// isolationCases are the SiteProfileService's isolation cases: tenant A
// keeps a profile of shop.test; B can neither read, list nor delete it,
// and B's own profile of the same domain leaves A's alone.
func isolationCases(t *testing.T, ts *testServer, actx, bctx context.Context) map[string]func() error {
	sp := wfv1.NewSiteProfileServiceClient(ts.conn)
	_, err := sp.PutSiteProfile(actx, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{
		Domain: "shop.test", Notes: "A's notes", Consent: &wfv1.ConsentSelectors{Banner: "#cookies", Accept: "#accept"}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		got, err := sp.GetSiteProfile(actx, &wfv1.GetSiteProfileRequest{Domain: "shop.test"})
		require.NoError(t, err, "B's calls removed A's profile")
		require.Equal(t, "A's notes", got.Notes, "B's calls changed A's profile")
	})
	return map[string]func() error{
		"/wayfinder.v1.SiteProfileService/GetSiteProfile": func() error {
			_, err := sp.GetSiteProfile(bctx, &wfv1.GetSiteProfileRequest{Domain: "shop.test"})
			return err
		},
		"/wayfinder.v1.SiteProfileService/ListSiteProfiles": func() error {
			l, err := sp.ListSiteProfiles(bctx, &wfv1.ListSiteProfilesRequest{})
			require.NoError(t, err)
			for _, p := range l.Profiles {
				require.NotEqual(t, "A's notes", p.Notes, "B lists A's profile")
			}
			return status.Error(codes.NotFound, "n/a")
		},
		"/wayfinder.v1.SiteProfileService/DeleteSiteProfile": func() error {
			_, err := sp.DeleteSiteProfile(bctx, &wfv1.DeleteSiteProfileRequest{Domain: "shop.test"})
			return err
		},
		"/wayfinder.v1.SiteProfileService/PutSiteProfile": func() error {
			_, err := sp.PutSiteProfile(bctx, &wfv1.PutSiteProfileRequest{Profile: &wfv1.SiteProfile{Domain: "other.test", Notes: "B's"}})
			require.NoError(t, err)
			return status.Error(codes.NotFound, "n/a")
		},
	}
}

func pollFinished(t *testing.T, ctx context.Context, c wfv1.RunServiceClient, id string) *wfv1.Run {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := c.GetRun(ctx, &wfv1.GetRunRequest{RunId: id})
		require.NoError(t, err)
		if r.EndTime != nil {
			return r
		}
		require.True(t, time.Now().Before(deadline), "run %s did not finish", id)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCredentials: values are write-only (never in a response), sealed at
// rest, checked against their type, rotated with a version bump, audited.
func TestCredentials(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	ts := startServer(t, dbURL, serverOpts{})
	ctx := context.Background()
	creds := wfv1.NewCredentialServiceClient(ts.conn)
	const secret = "Sup3r-Secret-Client-Value"

	c, err := creds.CreateCredential(ctx, &wfv1.CreateCredentialRequest{Name: "partner-api",
		Type:   wfv1.CredentialType_CREDENTIAL_TYPE_OAUTH2_CLIENT_CREDENTIALS,
		Values: map[string]string{"client_id": "wayfinder", "client_secret": secret, "token_url": "https://auth.example.com/token"}})
	require.NoError(t, err)
	require.Equal(t, []string{"client_id", "client_secret", "token_url"}, c.Fields)
	require.Equal(t, int32(1), c.Version)
	require.Equal(t, "test1", c.KeyId)

	_, err = creds.CreateCredential(ctx, &wfv1.CreateCredentialRequest{Name: "partner-api",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": "x"}})
	requireCode(t, err, "AlreadyExists")

	bad := []struct {
		name string
		req  *wfv1.CreateCredentialRequest
	}{
		{"no type", &wfv1.CreateCredentialRequest{Name: "x", Values: map[string]string{"a": "b"}}},
		{"bad name", &wfv1.CreateCredentialRequest{Name: "Bad Name", Type: wfv1.CredentialType_CREDENTIAL_TYPE_GENERIC, Values: map[string]string{"a": "b"}}},
		{"missing field", &wfv1.CreateCredentialRequest{Name: "x", Type: wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, Values: map[string]string{"username": "u"}}},
		{"unknown field", &wfv1.CreateCredentialRequest{Name: "x", Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": "k", "extra": secret}}},
		{"no values", &wfv1.CreateCredentialRequest{Name: "x", Type: wfv1.CredentialType_CREDENTIAL_TYPE_GENERIC}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := creds.CreateCredential(ctx, tt.req)
			requireCode(t, err, "InvalidArgument")
			require.NotContains(t, err.Error(), secret)
		})
	}

	rotated, err := creds.RotateCredential(ctx, &wfv1.RotateCredentialRequest{Name: "partner-api",
		Values: map[string]string{"client_id": "wayfinder", "client_secret": secret + "-2", "token_url": "https://auth.example.com/token", "scope": "read"}})
	require.NoError(t, err)
	require.Equal(t, int32(2), rotated.Version)
	require.Contains(t, rotated.Fields, "scope")

	// Over REST too; no response carries a value.
	base := "http://" + ts.addrs.HTTP
	for _, path := range []string{"/v1/credentials", "/v1/credentials/partner-api"} {
		var body map[string]any
		require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+path, "", &body))
		require.NotContains(t, fmt.Sprint(body), secret)
	}
	require.Equal(t, http.StatusNotFound, restJSON(t, http.MethodGet, base+"/v1/credentials/missing", "", nil))
	require.Equal(t, http.StatusBadRequest, restJSON(t, http.MethodPost, base+"/v1/credentials", `{"name":"x","type":"CREDENTIAL_TYPE_API_KEY","values":{}}`, nil))

	// At rest the value is sealed.
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var sealed []byte
	require.NoError(t, conn.QueryRow(ctx, `SELECT sealed FROM credentials WHERE name = 'partner-api'`).Scan(&sealed))
	require.NotContains(t, string(sealed), secret)
	require.True(t, strings.HasPrefix(string(sealed), "test1\x00"))

	_, err = creds.DeleteCredential(ctx, &wfv1.DeleteCredentialRequest{Name: "partner-api"})
	require.NoError(t, err)
	_, err = creds.GetCredential(ctx, &wfv1.GetCredentialRequest{Name: "partner-api"})
	requireCode(t, err, "NotFound")

	evs, err := wfv1.NewAccessServiceClient(ts.conn).ListAuditEvents(ctx, &wfv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	var kinds []string
	for _, e := range evs.Events {
		kinds = append(kinds, e.Kind)
		require.NotContains(t, protojson.Format(e), secret)
	}
	require.Equal(t, []string{"credential.deleted", "credential.rotated", "credential.created"}, kinds)
}

// TestInlineSecretsSealed: a run's inline secrets are stored only sealed;
// every read of the run shows them redacted.
func TestInlineSecretsSealed(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	ts := startServer(t, dbURL, serverOpts{})
	s := newSite(t)
	ctx := context.Background()
	const secret = "tool-header-s3cret-value"
	schema, err := structpb.NewStruct(map[string]any{"type": "object"})
	require.NoError(t, err)
	p := params(s.URL + "/")
	p.Tools = []*wfv1.ToolDefinition{{Name: "lookup", Description: "Look something up", InputSchema: schema,
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{Url: s.URL + "/hook",
			Headers: map[string]string{"Authorization": "Bearer " + secret}}}}}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	require.Equal(t, "[redacted]", run.Params.Tools[0].GetWebhook().Headers["Authorization"])
	finished := pollFinished(t, ctx, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, finished.Status, "the worker runs with the sealed params")
	require.NotContains(t, protojson.Format(finished), secret)

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var params, sealed []byte
	require.NoError(t, conn.QueryRow(ctx, `SELECT params::text, sealed_params FROM runs WHERE id = $1`, run.Id).Scan(&params, &sealed))
	require.NotContains(t, string(params), secret)
	require.NotEmpty(t, sealed)
	require.NotContains(t, string(sealed), secret)
	for _, ev := range collectEvents(t, ts.client, run.Id, 0) {
		require.NotContains(t, protojson.Format(ev), secret)
	}
}

// TestModelKeyFromCredential: a run's model API key can be a stored
// credential: the vendor receives it, the run never shows it, the use is
// audited, and a missing credential is refused at CreateRun.
func TestModelKeyFromCredential(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	ctx := context.Background()
	site := demoSite(t)
	const key = "sk-ant-from-a-credential-0042"
	_, err := wfv1.NewCredentialServiceClient(ts.conn).CreateCredential(ctx, &wfv1.CreateCredentialRequest{
		Name: "anthropic", Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": key}})
	require.NoError(t, err)

	fake := llmtest.NewAnthropic(t, demoScript(t))
	model := &wfv1.ModelSettings{Provider: "anthropic", Model: "test-model", BaseUrl: fake.URL, ApiKeyCredential: "anthropic"}
	p := &wfv1.RunParams{Goal: "Record a team lunch of 42.50 as a Meals expense and check the total", StartUrl: site,
		AllowedDomains: []string{"127.0.0.1"}, Controller: model,
		Judge: &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC}}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	calls := fake.Calls()
	require.NotEmpty(t, calls)
	for _, c := range calls {
		require.Equal(t, key, c.Header.Get("X-Api-Key"), "the vendor did not get the credential's key")
	}
	require.NotContains(t, protojson.Format(final), key)

	evs, err := wfv1.NewAccessServiceClient(ts.conn).ListAuditEvents(ctx, &wfv1.ListAuditEventsRequest{Kind: "credential.used", RunId: run.Id})
	require.NoError(t, err)
	require.Len(t, evs.Events, 1)
	require.Equal(t, "anthropic", evs.Events[0].Subject)

	p.Controller = &wfv1.ModelSettings{Provider: "anthropic", BaseUrl: fake.URL, ApiKeyCredential: "missing"}
	_, err = ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	st := requireCode(t, err, "InvalidArgument")
	require.Contains(t, fieldViolations(st), "params.controller.api_key_credential")
}
