package duel

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine is pure (STYLE.md habit 1): it imports env (the core: the game
// interface and the RNG), obs (the Section type) and the standard library's pure packages, never I/O.
func TestEngineImportsNothingWithIO(t *testing.T) {
	allowed := map[string]bool{
		"errors": true, "fmt": true, "math/bits": true, "strconv": true, "strings": true,
		"github.com/davidgoliath/dgenv/env": true, "github.com/davidgoliath/dgenv/obs": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %q, outside the engine's allowed set", f, path)
			}
		}
	}
}
