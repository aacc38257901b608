package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequestToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		cookie string
		want   string
	}{
		{name: "bearer header", header: "Bearer abc", want: "abc"},
		{name: "header wins over cookie", header: "Bearer abc", cookie: "def", want: "abc"},
		{name: "cookie", cookie: "def", want: "def"},
		{name: "another scheme is no token", header: "Basic dXNlcjpwYXNz", cookie: "def", want: ""},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/fleet", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			if tt.cookie != "" {
				r.AddCookie(&http.Cookie{Name: tokenCookie, Value: tt.cookie})
			}
			if got := requestToken(r); got != tt.want {
				t.Errorf("requestToken = %q, want %q", got, tt.want)
			}
		})
	}
	if a, b := tokenID("abc"), tokenID("abd"); a == b || len(a) != len("token:")+64 {
		t.Errorf("token ids %q, %q", a, b)
	}
}

func TestLoopbackHostAndOrigin(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1:8800": true, "localhost:8800": true, "[::1]:8800": true, "127.0.0.1": true,
		"rebound.example:8800": false, "10.0.0.1:8800": false, "": false, // loopback-check: not dialed
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	for _, tt := range []struct {
		origin, fetchSite string
		want              bool
	}{
		{origin: "http://127.0.0.1:8800", want: true},
		{origin: "https://127.0.0.1:8800", want: true},
		{origin: "http://evil.example", want: false}, // loopback-check: not dialed
		{origin: "null", want: false},
		{origin: "", want: true},
		{origin: "", fetchSite: "cross-site", want: false},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8800/api/resync", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
		}
		if got := sameOrigin(r); got != tt.want {
			t.Errorf("sameOrigin(Origin %q, Sec-Fetch-Site %q) = %v, want %v", tt.origin, tt.fetchSite, got, tt.want)
		}
	}
}
