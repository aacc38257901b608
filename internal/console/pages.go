package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
)

// ui holds the pages, script, style and icon, served from the binary: the
// console loads nothing from any other site.
//
//go:embed ui
var ui embed.FS

var pages = template.Must(template.ParseFS(ui, "ui/*.html"))

// pageTitles are the titles of the pages.
var pageTitles = map[string]string{"fleet": "Fleet", "resource": "Resource", "clusters": "Clusters", "history": "History"}

// servePage serves the shell of a page; its script renders it from the
// JSON API.
func (s *Server) servePage(w http.ResponseWriter, page string) {
	render(w, http.StatusOK, "page.html", map[string]any{"Page": page, "Title": pageTitles[page], "Mode": s.opts.Mode, "Token": s.opts.Mode == ModeToken})
}

// renderSignIn serves the sign-in page with status; next is the page to
// go to after, message what went wrong. Neither the token nor anything of
// it is ever written back.
func (s *Server) renderSignIn(w http.ResponseWriter, status int, next, message string) {
	render(w, status, "signin.html", map[string]any{"Next": next, "Message": message})
}

func render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// staticFiles serves the script, style and icon.
func staticFiles() http.Handler {
	sub, err := fs.Sub(ui, "ui/static")
	if err != nil {
		panic(err)
	}
	return http.FileServerFS(sub)
}

// serveFavicon answers the browsers that ask for /favicon.ico whatever
// the page says.
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	data, err := ui.ReadFile("ui/static/favicon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write(data)
}
