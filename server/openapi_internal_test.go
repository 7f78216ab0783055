package server

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/davidgoliath/dgenv/env"
)

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]json.RawMessage `json:"schemas"`
		Responses map[string]struct {
			Description string `json:"description"`
		} `json:"responses"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(openAPI, &d); err != nil {
		t.Fatalf("server/openapi.json is not JSON: %v", err)
	}
	if d.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", d.OpenAPI)
	}
	return d
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// A path template's {name} is gin's :name.
var templateParam = regexp.MustCompile(`\{([^}/]+)\}`)

func TestOpenAPIPathsAreTheRegisteredRoutes(t *testing.T) {
	d := loadOpenAPI(t)
	documented := map[string]bool{}
	for p, item := range d.Paths {
		for m := range item {
			if slices.Contains(httpMethods, m) {
				documented[strings.ToUpper(m)+" "+templateParam.ReplaceAllString(p, ":$1")] = true
			}
		}
	}
	cfg := DefaultConfig()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registered := map[string]bool{}
	for _, r := range s.handler.(*gin.Engine).Routes() {
		// The browser app's static files (web.go) are pages, not API routes.
		if !strings.HasPrefix(r.Path, "/v1/") && r.Path != "/metrics" {
			continue
		}
		registered[r.Method+" "+r.Path] = true
	}
	if len(registered) < 10 {
		t.Fatalf("only %d routes registered: %v", len(registered), registered)
	}
	for r := range registered {
		if !documented[r] {
			t.Errorf("route %s is registered but not in server/openapi.json", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("server/openapi.json documents %s, which is not a registered route", r)
		}
	}
}

func TestOpenAPIDocsCopyIsIdentical(t *testing.T) {
	docs, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, openAPI) {
		t.Fatal("docs/openapi.json differs from server/openapi.json (the served one): cp server/openapi.json docs/openapi.json")
	}
}

// The error schema's code enum is exactly the Code constants of errors.go,
// and every documented error answer's status is the status of some code.
func TestOpenAPIErrorCodesAreTheServersCodes(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../env/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
				for _, v := range vs.Values {
					s, _ := strconv.Unquote(v.(*ast.BasicLit).Value)
					codes = append(codes, s)
				}
			}
		}
	}
	if len(codes) < 5 {
		t.Fatalf("found only %d Code constants in env/errors.go: %v", len(codes), codes)
	}
	d := loadOpenAPI(t)
	var errSchema struct {
		Properties struct {
			Error struct {
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"error"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(d.Components.Schemas["Error"], &errSchema); err != nil {
		t.Fatal(err)
	}
	documented := errSchema.Properties.Error.Properties.Code.Enum
	slices.Sort(codes)
	slices.Sort(documented)
	if !slices.Equal(codes, documented) {
		t.Fatalf("error codes in server/openapi.json = %v, env/errors.go has %v", documented, codes)
	}
	statuses := map[string]bool{}
	for _, c := range codes {
		statuses[strconv.Itoa(Status(env.Code(c)))] = true
	}
	for p, item := range d.Paths {
		for m, raw := range item {
			if !slices.Contains(httpMethods, m) {
				continue
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			for st, r := range op.Responses {
				if st >= "400" && strings.Contains(string(r), "components/responses") && !statuses[st] {
					t.Errorf("%s %s documents an error answer %s that no error code has", m, p, st)
				}
			}
		}
	}
}

func TestOpenAPIIsServedWithoutAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AuthToken = "s3cret"
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/v1/openapi.json", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json = %d, want 200", w.Code)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if !bytes.Equal(w.Body.Bytes(), openAPI) {
		t.Error("the served document differs from the embedded one")
	}
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/v1/policies", nil))
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/policies without the token = %d, want 401 (the document is the only new open route)", w.Code)
	}
}

// schemathesis found these: a null seat was taken as seat 0, a JSON null
// body as {}, and a known path with another method answered 404.
func TestFoundBySchemathesis(t *testing.T) {
	s, err := New(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	do := func(method, path, ct string, body []byte) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, "http://localhost"+path, bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		s.Handler().ServeHTTP(w, r)
		return w
	}
	t.Run("a null learner seat is refused in JSON", func(t *testing.T) {
		w := do("POST", "/v1/sessions", "application/json", []byte(`{"num_envs": 1, "learner_seats": [null], "opponent": "random"}`))
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "learner_seats[0]: null") {
			t.Fatalf("create with learner_seats [null] = %d %s, want 400 naming learner_seats[0]", w.Code, w.Body)
		}
	})
	t.Run("a null learner seat is refused in msgpack", func(t *testing.T) {
		// {"learner_seats": [nil], "opponent": "random"}
		body := append([]byte{0x82, 0xad}, "learner_seats"...)
		body = append(body, 0x91, 0xc0, 0xa8)
		body = append(body, "opponent"...)
		body = append(body, 0xa6)
		body = append(body, "random"...)
		w := do("POST", "/v1/sessions", "application/msgpack", body)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "learner_seats[0]: null") {
			t.Fatalf("create with learner_seats [nil] = %d %q, want 400 naming learner_seats[0]", w.Code, w.Body)
		}
	})
	t.Run("a JSON null body is refused", func(t *testing.T) {
		w := do("POST", "/v1/sessions", "application/json", []byte(` null `))
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "want a JSON object") {
			t.Fatalf("create with body null = %d %s, want 400", w.Code, w.Body)
		}
	})
	t.Run("seats still decode", func(t *testing.T) {
		w := do("POST", "/v1/sessions", "application/json", []byte(`{"num_envs": 1, "learner_seats": [1, 2], "opponent": "random"}`))
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"learner_seats":[1,2]`) {
			t.Fatalf("create with learner_seats [1, 2] = %d %s", w.Code, w.Body)
		}
	})
	t.Run("a known path with another method is 405 with Allow", func(t *testing.T) {
		w := do("PUT", "/v1/sessions/0123", "", nil)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, DELETE" || !strings.Contains(w.Body.String(), `"method_not_allowed"`) {
			t.Fatalf("PUT /v1/sessions/0123 = %d Allow %q %s, want 405 Allow GET, DELETE", w.Code, w.Header().Get("Allow"), w.Body)
		}
	})
}
