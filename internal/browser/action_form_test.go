package browser_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestFill(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	for _, tc := range []struct {
		name   string
		target browser.Target
		value  string
		read   string // JS expression reading the field
	}{
		{"text input", browser.Target{CSS: "#name"}, "Ada Lovelace", "document.getElementById('name').value"},
		{"textarea", browser.Target{CSS: "#bio"}, "line one\nline two", "document.getElementById('bio').value"},
		{"contenteditable", browser.Target{CSS: "#editor"}, "new text", "document.getElementById('editor').innerText"},
		{"date input", browser.Target{Role: "textbox", Name: "Birthday", CSS: "#date"}, "2024-02-29", "document.getElementById('date').value"},
		{"clear", browser.Target{CSS: "#name"}, "", "document.getElementById('name').value"},
		{"by label text", browser.Target{Text: "Bio"}, "found by its label", "document.getElementById('bio').value"},
		// A name alone also matches the wrapping label and its text; the
		// control named that way is the one filled.
		{"by name only", browser.Target{Name: "Name"}, "found by its name", "document.getElementById('name').value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := env.page(t, "/form.html")
			target := tc.target
			res := ok(t, pg, browser.Action{Kind: browser.ActionFill, Target: &target, Value: tc.value})
			require.Equal(t, tc.value, js(t, pg, tc.read).Str())
			require.Equal(t, tc.value, res.Value)
		})
	}
	t.Run("by ref fires input events", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		ok(t, pg, browser.Action{Kind: browser.ActionFill, Ref: refOf(t, pg, "textbox", "Name"), Value: "Grace"})
		require.Equal(t, "Grace", js(t, pg, "document.getElementById('name').value").Str())
		require.Equal(t, `["input:name"]`, js(t, pg, "JSON.stringify(log.events)").Str())
	})
	for _, tc := range []struct {
		name string
		css  string
		code browser.ErrorCode
	}{
		{"read-only", "#ro", browser.CodeElementDisabled},
		{"disabled", "#off", browser.CodeElementDisabled},
		{"a select", "#country", browser.CodeInvalidParams},
		{"a checkbox", "#agree", browser.CodeInvalidParams},
		{"a button", "#pick", browser.CodeActionFailed},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			pg := env.page(t, "/form.html")
			failsWith(t, pg, browser.Action{Kind: browser.ActionFill, Target: &browser.Target{CSS: tc.css}, Value: "x"}, tc.code)
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("type key by key", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionType, Target: &browser.Target{CSS: "#keys"}, Value: "aB!é"})
		require.Equal(t, "aB!é", res.Value)
		// é has no key on a US keyboard: it arrives as text input, no keydown.
		require.Equal(t, `["a","B","!"]`, js(t, pg, "JSON.stringify(log.keys)").Str())
		// Typing keeps what is there.
		res = ok(t, pg, browser.Action{Kind: browser.ActionType, Value: "z"})
		require.Equal(t, "aB!éz", res.Value)
	})
	t.Run("chords and named keys", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		ok(t, pg, browser.Action{Kind: browser.ActionType, Target: &browser.Target{CSS: "#keys"}, Value: "hello"})
		ok(t, pg, browser.Action{Kind: browser.ActionPress, Target: &browser.Target{CSS: "#keys"}, Keys: "Control+A Backspace"})
		require.Equal(t, "", js(t, pg, "document.getElementById('keys').value").Str())
		ok(t, pg, browser.Action{Kind: browser.ActionPress, Keys: "Shift+a Enter ArrowLeft"})
		require.Equal(t, "A", js(t, pg, "document.getElementById('keys').value").Str())
		require.Equal(t, `["h","e","l","l","o","C-Control","C-a","Backspace","S-Shift","S-A","Enter","ArrowLeft"]`,
			js(t, pg, "JSON.stringify(log.keys)").Str())
	})
	t.Run("tab moves the focus", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		ok(t, pg, browser.Action{Kind: browser.ActionPress, Target: &browser.Target{CSS: "#name"}, Keys: "Tab"})
		require.Equal(t, "bio", js(t, pg, "document.activeElement.id").Str())
		ok(t, pg, browser.Action{Kind: browser.ActionPress, Keys: "Shift+Tab"})
		require.Equal(t, "name", js(t, pg, "document.activeElement.id").Str())
	})
}

func TestSelect(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("native select by label and by value", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionSelect, Ref: refOf(t, pg, "combobox", "Country"), Value: "germany"})
		require.Equal(t, "Germany", res.Value)
		ok(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{Text: "Country"}, Value: "fr"})
		require.Equal(t, `["change:de","change:fr"]`, js(t, pg, "JSON.stringify(log.events)").Str())
	})
	t.Run("native select errors", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{CSS: "#country"}, Value: "Spain"}, browser.CodeActionFailed)
		require.Contains(t, res.Error.Message, "France, Germany")
		failsWith(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{CSS: "#country"}, Value: "Italy"}, browser.CodeElementDisabled)
		failsWith(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{CSS: "#country"}, Values: []string{"fr", "de"}}, browser.CodeInvalidParams)
	})
	t.Run("multiple select", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{CSS: "#toppings"}, Values: []string{"Cheese", "mu"}})
		require.Equal(t, "Cheese, Mushrooms", res.Value)
	})
	t.Run("aria combobox", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionSelect, Ref: refOf(t, pg, "combobox", "Fruit"), Value: "Cherry"})
		require.Equal(t, "Cherry", res.Value)
		require.Equal(t, "Cherry", js(t, pg, "log.fruit").Str())
	})
	t.Run("aria combobox that must be typed into", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		// Papaya is not among the five options the combobox shows at first.
		res := ok(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{Role: "combobox", Name: "Fruit"}, Value: "papaya"})
		require.Equal(t, "Papaya", res.Value)
		require.Equal(t, "Papaya", js(t, pg, "log.fruit").Str())
	})
	t.Run("aria listbox", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		ok(t, pg, browser.Action{Kind: browser.ActionSelect, Ref: refOf(t, pg, "listbox", "Color"), Value: "Blue"})
		require.Equal(t, "Blue", js(t, pg, "log.color").Str())
		require.Equal(t, "true", js(t, pg, "document.getElementById('c-blue').getAttribute('aria-selected')").Str())
	})
	t.Run("aria option missing", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionSelect, Target: &browser.Target{CSS: "#colors"}, Value: "Green", Timeout: 0}, browser.CodeActionFailed)
		require.Contains(t, res.Error.Message, "Red, Blue")
	})
}

func TestCheck(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	for _, tc := range []struct {
		name   string
		target browser.Target
		read   string
	}{
		{"checkbox", browser.Target{CSS: "#agree"}, "document.getElementById('agree').checked"},
		{"checkbox hidden behind a styled label", browser.Target{CSS: "#news"}, "document.getElementById('news').checked"},
		{"aria switch updated asynchronously", browser.Target{Role: "switch", Name: "Dark mode"}, "document.getElementById('switch').getAttribute('aria-checked') === 'true'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := env.page(t, "/form.html")
			target := tc.target
			res := ok(t, pg, browser.Action{Kind: browser.ActionCheck, Target: &target})
			require.True(t, *res.Checked)
			require.True(t, js(t, pg, tc.read).Bool())
			res = ok(t, pg, browser.Action{Kind: browser.ActionCheck, Target: &target})
			require.Contains(t, res.Note, "already checked")
			ok(t, pg, browser.Action{Kind: browser.ActionUncheck, Target: &target})
			require.False(t, js(t, pg, tc.read).Bool())
		})
	}
	t.Run("radio", func(t *testing.T) {
		pg := env.page(t, "/form.html")
		ok(t, pg, browser.Action{Kind: browser.ActionCheck, Ref: refOf(t, pg, "radio", "Large")})
		require.Equal(t, "l", js(t, pg, "document.querySelector('[name=size]:checked').value").Str())
		failsWith(t, pg, browser.Action{Kind: browser.ActionUncheck, Target: &browser.Target{CSS: "#large"}}, browser.CodeInvalidParams)
		failsWith(t, pg, browser.Action{Kind: browser.ActionCheck, Target: &browser.Target{CSS: "#name"}}, browser.CodeActionFailed)
	})
}

func TestUpload(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	dir := t.TempDir()
	report, photo := filepath.Join(dir, "report.pdf"), filepath.Join(dir, "photo.png")
	require.NoError(t, os.WriteFile(report, []byte("%PDF-1.4"), 0o600))
	require.NoError(t, os.WriteFile(photo, []byte("png"), 0o600))
	env.s.SetActionOptions(browser.ActionOptions{UploadFiles: []string{report, photo}})

	pg := env.page(t, "/form.html")
	res := ok(t, pg, browser.Action{Kind: browser.ActionUpload, Target: &browser.Target{CSS: "#file"}, Files: []string{"report.pdf"}})
	require.Equal(t, "report.pdf", res.Value)
	require.Equal(t, "report.pdf", js(t, pg, "document.getElementById('file').files[0].name").Str())

	// A button that opens the file chooser of a hidden input.
	res = ok(t, pg, browser.Action{Kind: browser.ActionUpload, Target: &browser.Target{Role: "button", Name: "Attach files"}, Files: []string{report, "photo.png"}})
	require.Equal(t, "report.pdf, photo.png", res.Value)
	require.Equal(t, 2, js(t, pg, "document.getElementById('hiddenfile').files.length").Int())

	res = failsWith(t, pg, browser.Action{Kind: browser.ActionUpload, Target: &browser.Target{CSS: "#file"}, Files: []string{"/etc/passwd"}}, browser.CodeInvalidParams)
	require.Contains(t, res.Error.Message, "report.pdf, photo.png")
	failsWith(t, pg, browser.Action{Kind: browser.ActionUpload, Target: &browser.Target{CSS: "#file"}, Files: []string{"report.pdf", "photo.png"}}, browser.CodeInvalidParams)
}
