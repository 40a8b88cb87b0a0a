package bench

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestSite(t *testing.T) {
	t.Parallel()
	site, err := StartSite()
	require.NoError(t, err)
	t.Cleanup(site.Close)
	require.True(t, strings.HasPrefix(site.URL, "http://127.0.0.1:"))
	require.True(t, strings.HasPrefix(site.CrossOriginURL, "http://localhost:"))

	names := map[string]bool{}
	for _, p := range Pages() {
		require.False(t, names[p.Name], "duplicate page %s", p.Name)
		names[p.Name] = true
		code, ctype, body := get(t, site.URL+p.Path)
		require.Equal(t, http.StatusOK, code, p.Path)
		require.Equal(t, "text/html; charset=utf-8", ctype)
		if p.Name == "iframes" { // the target is in the same-origin frame
			_, _, body = get(t, site.URL+"/frame-login.html")
		}
		require.Contains(t, body, ">"+p.Click.Name+"<", "page %s has its click target", p.Name)
	}

	_, _, iframes := get(t, site.URL+"/iframes.html")
	require.Contains(t, iframes, `src="`+site.CrossOriginURL+`/frame-payment.html"`)
	code, _, _ := get(t, site.CrossOriginURL+"/frame-payment.html")
	require.Equal(t, http.StatusOK, code)

	code, ctype, icon := get(t, site.URL+"/favicon.ico")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "image/png", ctype)
	require.True(t, strings.HasPrefix(icon, "\x89PNG"))

	code, _, _ = get(t, site.URL+"/nope.html")
	require.Equal(t, http.StatusNotFound, code)
}

func TestGeneratedPages(t *testing.T) {
	t.Parallel()
	table := string(tablePage())
	require.Equal(t, tableRows, strings.Count(table, ">Edit</button>"))
	require.Equal(t, tableRows, strings.Count(table, ">Delete</button>"))

	many := string(manyPage())
	interactive := regexp.MustCompile(`<(a|button|input)[ >]`).FindAllString(many, -1)
	require.Len(t, interactive, manySections*30+1)

	article := string(articlePage())
	require.Equal(t, articleParagraphs+1, strings.Count(article, "<p>"), "paragraphs and the byline")

	// Deterministic: two renderings are the same page.
	require.Equal(t, table, string(tablePage()))
	require.Equal(t, many, string(manyPage()))
	require.Equal(t, article, string(articlePage()))
}
