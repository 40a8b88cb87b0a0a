package browser

import (
	"context"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// DialogPolicy says how JavaScript dialogs (alert, confirm, prompt,
// beforeunload) are answered. Dialogs are answered the moment they open,
// so a page never stays blocked on one; every dialog is reported in the
// result of the action during which it opened. The zero value accepts
// every dialog and answers prompts with their default text.
type DialogPolicy struct {
	// Dismiss cancels confirm, prompt and beforeunload dialogs instead of
	// accepting them (an alert only has OK). Default false: accept.
	Dismiss bool `json:"dismiss,omitempty"`
	// PromptText answers prompt dialogs that are accepted. Default: the
	// prompt's own default text.
	PromptText string `json:"prompt_text,omitempty"`
}

// DialogEvent reports one JavaScript dialog and how it was answered.
type DialogEvent struct {
	// Type is alert, confirm, prompt or beforeunload.
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
	// DefaultPrompt is the default text a prompt dialog offered.
	DefaultPrompt string `json:"default_prompt,omitempty"`
	Accepted      bool   `json:"accepted"`
	// PromptText is the answer given to an accepted prompt.
	PromptText string `json:"prompt_text,omitempty"`
	// URL of the document that opened the dialog.
	URL string `json:"url,omitempty"`
	// Error is set when the dialog could not be answered.
	Error string `json:"error,omitempty"`
	// Omitted counts the dialogs answered after this one that are not
	// listed: at most MaxDialogsPerAction are reported per action, so a
	// page that opens dialogs in a loop cannot grow the result (and the
	// step record and the model's prompt) without bound.
	Omitted int `json:"omitted,omitempty"`
}

// MaxDialogsPerAction caps the dialogs reported for one action (and kept
// per tab between actions). Later ones are still answered at once, and
// counted in the last reported dialog's Omitted.
const MaxDialogsPerAction = 20

// appendDialogs adds more to dialogs, keeping at most MaxDialogsPerAction
// and counting the rest in the last kept dialog's Omitted.
func appendDialogs(dialogs, more []DialogEvent) []DialogEvent {
	for _, d := range more {
		if len(dialogs) < MaxDialogsPerAction {
			dialogs = append(dialogs, d)
			continue
		}
		dialogs[len(dialogs)-1].Omitted += 1 + d.Omitted
	}
	return dialogs
}

// answerDialog answers a dialog per the running action's policy, or the
// session's, and records it for the next result.
func (pt *pageTab) answerDialog(e proto.PageJavascriptDialogOpening) {
	pt.mu.Lock()
	policy := pt.dialogPolicy
	pt.mu.Unlock()
	if policy == nil {
		p := pt.tracker.options().Dialogs
		policy = &p
	}
	accept := !policy.Dismiss || e.Type == proto.PageDialogTypeAlert
	ev := DialogEvent{Type: string(e.Type), Message: e.Message, DefaultPrompt: e.DefaultPrompt, Accepted: accept, URL: e.URL}
	req := proto.PageHandleJavaScriptDialog{Accept: accept}
	if accept && e.Type == proto.PageDialogTypePrompt {
		req.PromptText = policy.PromptText
		if req.PromptText == "" {
			req.PromptText = e.DefaultPrompt
		}
		ev.PromptText = req.PromptText
	}
	// Answered on the event goroutine: a dialog blocks the page (and any
	// input event in flight) until answered, and nothing else can answer it.
	ctx, cancel := context.WithTimeout(pt.tracker.ctx, 5*time.Second)
	defer cancel()
	if err := req.Call(pt.client(ctx)); err != nil {
		ev.Error = err.Error()
	}
	pt.mu.Lock()
	pt.dialogs = appendDialogs(pt.dialogs, []DialogEvent{ev})
	pt.notifyLocked()
	pt.mu.Unlock()
}

// setDialogPolicy makes p (when not nil) the policy for dialogs until it is
// reset with nil.
func (pt *pageTab) setDialogPolicy(p *DialogPolicy) {
	pt.mu.Lock()
	pt.dialogPolicy = p
	pt.mu.Unlock()
}
