package api

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// promptStore is what the PromptService needs of the store.
type promptStore interface {
	CreatePrompt(ctx context.Context, tenant string, p *wfv1.Prompt) (*wfv1.Prompt, error)
	GetPrompt(ctx context.Context, tenant, name string, version int32) (*wfv1.Prompt, error)
	ListPrompts(ctx context.Context, tenant, pageToken string, limit int) ([]*wfv1.Prompt, string, error)
	ListPromptVersions(ctx context.Context, tenant, name, pageToken string, limit int) ([]*wfv1.Prompt, string, error)
	DeletePrompt(ctx context.Context, tenant, name string) error
}

// PromptService implements wayfinder.v1.PromptService: the caller's
// tenant's prompt library. Another tenant's prompts are NOT_FOUND.
type PromptService struct {
	wfv1.UnimplementedPromptServiceServer
	store promptStore
	log   *slog.Logger
}

// NewPromptService returns the prompt service; log nil discards.
func NewPromptService(st *store.Store, log *slog.Logger) *PromptService {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PromptService{store: st, log: log}
}

// CreatePrompt implements wayfinder.v1.PromptService: a new prompt as
// version 1, or the next version of an existing name.
func (s *PromptService) CreatePrompt(ctx context.Context, req *wfv1.CreatePromptRequest) (*wfv1.Prompt, error) {
	var v fault.Violations
	validatePrompt(&v, req.GetPrompt())
	if err := v.Err(); err != nil {
		return nil, err
	}
	p := proto.Clone(req.GetPrompt()).(*wfv1.Prompt)
	p.Version, p.CreateTime, p.CreatedBy = 0, nil, tenant.From(ctx).Actor()
	out, err := s.store.CreatePrompt(ctx, tenant.ID(ctx), p)
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "prompt created", "tenant", tenant.ID(ctx), "prompt", out.Name, "version", out.Version)
	return out, nil
}

// GetPrompt implements wayfinder.v1.PromptService.
func (s *PromptService) GetPrompt(ctx context.Context, req *wfv1.GetPromptRequest) (*wfv1.Prompt, error) {
	var v fault.Violations
	validatePromptName(&v, "name", req.GetName())
	if req.GetVersion() < 0 {
		v.Add("version", "a version from 1, or 0 for the latest")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return s.store.GetPrompt(ctx, tenant.ID(ctx), req.GetName(), req.GetVersion())
}

// ListPrompts implements wayfinder.v1.PromptService.
func (s *PromptService) ListPrompts(ctx context.Context, req *wfv1.ListPromptsRequest) (*wfv1.ListPromptsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if err := v.Err(); err != nil {
		return nil, err
	}
	ps, next, err := s.store.ListPrompts(ctx, tenant.ID(ctx), req.GetPageToken(), size)
	if err != nil {
		return nil, err
	}
	return &wfv1.ListPromptsResponse{Prompts: ps, NextPageToken: next}, nil
}

// ListPromptVersions implements wayfinder.v1.PromptService.
func (s *PromptService) ListPromptVersions(ctx context.Context, req *wfv1.ListPromptVersionsRequest) (*wfv1.ListPromptVersionsResponse, error) {
	var v fault.Violations
	validatePromptName(&v, "name", req.GetName())
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if err := v.Err(); err != nil {
		return nil, err
	}
	ps, next, err := s.store.ListPromptVersions(ctx, tenant.ID(ctx), req.GetName(), req.GetPageToken(), size)
	if err != nil {
		return nil, err
	}
	return &wfv1.ListPromptVersionsResponse{Prompts: ps, NextPageToken: next}, nil
}

// DeletePrompt implements wayfinder.v1.PromptService: every version;
// FAILED_PRECONDITION while a run that has not finished references it.
func (s *PromptService) DeletePrompt(ctx context.Context, req *wfv1.DeletePromptRequest) (*emptypb.Empty, error) {
	var v fault.Violations
	validatePromptName(&v, "name", req.GetName())
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := s.store.DeletePrompt(ctx, tenant.ID(ctx), req.GetName()); err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "prompt deleted", "tenant", tenant.ID(ctx), "prompt", req.GetName())
	return &emptypb.Empty{}, nil
}
