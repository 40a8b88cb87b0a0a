package api

import (
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Redacted replaces every secret value in stored and returned params.
const Redacted = "[redacted]"

// RedactParams returns a copy of p with every secret value replaced by
// Redacted, and whether p held any. The secret fields are the ones the
// proto marks "Secret": auth passwords, tokens, keys, client secrets,
// cookie values, localStorage values, the run webhook's signing secret, and
// the header values of callback webhooks, custom tool webhooks and the
// prompt runner.
func RedactParams(p *wfv1.RunParams) (*wfv1.RunParams, bool) {
	out := proto.Clone(p).(*wfv1.RunParams)
	found := false
	str := func(s *string) {
		if *s != "" {
			*s, found = Redacted, true
		}
	}
	values := func(m map[string]string) {
		for k, v := range m {
			if v != "" {
				m[k], found = Redacted, true
			}
		}
	}
	callback := func(cb *wfv1.AuthCallback) {
		if wh := cb.GetWebhook(); wh != nil {
			values(wh.Headers)
		}
	}
	for _, b := range out.GetAuth().GetBindings() {
		switch m := b.GetMethod().(type) {
		case *wfv1.DomainAuthBinding_Basic:
			str(&m.Basic.Password)
		case *wfv1.DomainAuthBinding_Bearer:
			str(&m.Bearer.Token)
		case *wfv1.DomainAuthBinding_ApiKey:
			str(&m.ApiKey.Key)
		case *wfv1.DomainAuthBinding_OauthClientCredentials:
			str(&m.OauthClientCredentials.ClientSecret)
		case *wfv1.DomainAuthBinding_Cookie:
			for _, c := range m.Cookie.GetCookies() {
				str(&c.Value)
			}
		case *wfv1.DomainAuthBinding_LocalStorage:
			values(m.LocalStorage.Entries)
		case *wfv1.DomainAuthBinding_CustomCallback:
			callback(m.CustomCallback)
		}
	}
	if cb := out.GetAuth().GetGlobalCallback(); cb != nil {
		callback(cb)
	}
	if wh := out.GetWebhook(); wh != nil {
		str(&wh.Secret)
	}
	if pr := out.GetPromptRunner(); pr != nil {
		values(pr.Headers)
	}
	for _, t := range out.GetTools() {
		if wh := t.GetWebhook(); wh != nil {
			values(wh.Headers)
		}
	}
	return out, found
}
