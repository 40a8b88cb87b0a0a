package api

import "github.com/wayfinder/wayfinder/internal/fault"

// validatePromptRef checks a prompt library reference ("name" or
// "name@version") of a run's model settings.
func validatePromptRef(v *fault.Violations, field, ref string) {
	v.Unimplemented(field, "the prompt library arrives with a later release; use prompt_text")
}
