package demo

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

//go:embed site/*.html
var pages embed.FS

// Demo credentials and the expense the demo goal enters.
const (
	DemoUser     = "alice"
	DemoPassword = "wonderland"
)

// Goal is the demo task, written as plain steps so the offline step
// controller runs it with no model key; a model reads it just as well.
const Goal = `Log in, record a team lunch of 42.50 as a Meals expense, and check the total:
1. Type alice into Username
2. Type wonderland into Password
3. Click Sign in
4. Expect text Welcome, alice
5. Click Expenses
6. Click New expense
7. Type Team lunch into Description
8. Type 42.50 into Amount
9. Select Meals in Category
10. Click Save
11. Expect text Total: 42.50
12. Expect URL /expenses`

// site is the demo web app: a login, a dashboard and an expense list with
// a form, with sessions in memory.
type site struct {
	tmpl *template.Template

	mu       sync.Mutex
	sessions map[string]*account // by session cookie
}

type account struct {
	user     string
	expenses []expense
}

type expense struct {
	Description, Category string
	Amount                float64
}

type page struct {
	Title    string
	User     string
	Error    string
	Expenses []expense
	Total    float64
}

func newSite() *site {
	return &site{
		tmpl:     template.Must(template.ParseFS(pages, "site/*.html")),
		sessions: map[string]*account{},
	}
}

func (s *site) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if s.account(r) != nil {
			http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
			return
		}
		s.render(w, "login.html", page{Title: "Sign in"})
	})
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /logout", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err == nil {
			s.mu.Lock()
			delete(s.sessions, c.Value)
			s.mu.Unlock()
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Path: "/", MaxAge: -1})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /dashboard", s.authed(func(w http.ResponseWriter, _ *http.Request, a *account) {
		s.render(w, "dashboard.html", s.page("Dashboard", a))
	}))
	mux.HandleFunc("GET /expenses", s.authed(func(w http.ResponseWriter, _ *http.Request, a *account) {
		s.render(w, "expenses.html", s.page("Expenses", a))
	}))
	mux.HandleFunc("GET /expenses/new", s.authed(func(w http.ResponseWriter, _ *http.Request, a *account) {
		s.render(w, "new.html", s.page("New expense", a))
	}))
	mux.HandleFunc("POST /expenses", s.authed(s.addExpense))
	return mux
}

func (s *site) login(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("username") != DemoUser || r.FormValue("password") != DemoPassword {
		s.renderStatus(w, http.StatusUnauthorized, "login.html", page{Title: "Sign in", Error: "Wrong username or password."})
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	s.mu.Lock()
	s.sessions[id] = &account{user: DemoUser}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "session", Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
}

func (s *site) addExpense(w http.ResponseWriter, r *http.Request, a *account) {
	desc := strings.TrimSpace(r.FormValue("description"))
	cat := r.FormValue("category")
	amount, err := strconv.ParseFloat(strings.TrimSpace(r.FormValue("amount")), 64)
	var problem string
	switch {
	case desc == "":
		problem = "Enter a description."
	case err != nil || amount <= 0:
		problem = "Enter the amount as a number, like 12.50."
	case cat == "":
		problem = "Choose a category."
	}
	if problem != "" {
		p := s.page("New expense", a)
		p.Error = problem
		s.renderStatus(w, http.StatusUnprocessableEntity, "new.html", p)
		return
	}
	s.mu.Lock()
	a.expenses = append(a.expenses, expense{Description: desc, Category: cat, Amount: amount})
	s.mu.Unlock()
	http.Redirect(w, r, "/expenses", http.StatusSeeOther)
}

func (s *site) account(r *http.Request) *account {
	c, err := r.Cookie("session")
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

func (s *site) authed(h func(http.ResponseWriter, *http.Request, *account)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := s.account(r)
		if a == nil {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		h(w, r, a)
	}
}

func (s *site) page(title string, a *account) page {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := page{Title: title, User: a.user, Expenses: append([]expense(nil), a.expenses...)}
	for _, e := range a.expenses {
		p.Total += e.Amount
	}
	return p
}

func (s *site) render(w http.ResponseWriter, name string, p page) {
	s.renderStatus(w, http.StatusOK, name, p)
}

func (s *site) renderStatus(w http.ResponseWriter, status int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = s.tmpl.ExecuteTemplate(w, name, p)
}
