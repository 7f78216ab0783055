package env_test

// env/ (the core and every game under it) and obs/ must know nothing of
// HTTP, msgpack, configuration or the process (STYLE.md habit 1): the
// server and cmd/ own those.

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// forbiddenImports may appear nowhere in the dependencies of env/ and obs/.
var forbiddenImports = []string{
	"net/http",
	"github.com/gin-gonic/gin",
	"github.com/vmihailenco/msgpack/v5",
	"github.com/spf13/viper",
}

// forbiddenDirect may not be imported by env/ or obs/ themselves (fmt
// itself depends on os, so only direct imports are checked for these).
var forbiddenDirect = []string{"os", "log", "log/slog", "net/http", "flag"}

func TestNoForbiddenImports(t *testing.T) {
	for _, pkg := range []struct{ name, dir string }{{"env", "."}, {"env/card", "card"}, {"obs", "../obs"}} {
		dir := pkg.dir
		t.Run(pkg.name+" imports none of os, log or net/http itself", func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "*.go"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no Go files in %s: %v", dir, err)
			}
			fset := token.NewFileSet()
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
				if err != nil {
					t.Fatalf("parse %s: %v", f, err)
				}
				for _, imp := range af.Imports {
					path, _ := strconv.Unquote(imp.Path.Value)
					if slices.Contains(forbiddenDirect, path) || slices.Contains(forbiddenImports, path) ||
						strings.Contains(path, "msgpack") || strings.Contains(path, "viper") || strings.Contains(path, "gin-gonic") {
						t.Errorf("%s imports %q", f, path)
					}
				}
			}
		})
	}
	t.Run("no dependency of env or obs is net/http, gin, msgpack or viper", func(t *testing.T) {
		goTool, err := exec.LookPath("go")
		if err != nil {
			t.Skip("go tool not found; the direct-import check above still ran")
		}
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}",
			"github.com/davidgoliath/dgenv/env", "github.com/davidgoliath/dgenv/env/card", "github.com/davidgoliath/dgenv/obs").Output()
		if err != nil {
			t.Fatalf("go list -deps: %v", err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/davidgoliath/dgenv/obs") {
			t.Fatalf("go list -deps printed %d packages without obs: %v", len(deps), deps)
		}
		// Subpackages (env/policy, ...) follow the same rule for their own imports.
		out, err = exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
			"github.com/davidgoliath/dgenv/env/...", "github.com/davidgoliath/dgenv/obs/...").Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			for _, imp := range f[1:] {
				if slices.Contains(forbiddenDirect, imp) {
					t.Errorf("%s imports %s", f[0], imp)
				}
			}
		}
		for _, dep := range deps {
			if slices.Contains(forbiddenImports, dep) || strings.HasPrefix(dep, "net/http/") ||
				strings.Contains(dep, "msgpack") || strings.Contains(dep, "viper") || strings.Contains(dep, "gin-gonic") {
				t.Errorf("env/obs depend on %s", dep)
			}
		}
	})
}
