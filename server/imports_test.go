package server_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServerReadsNoConfiguration keeps configuration in cmd/: the server
// package imports neither viper nor a flag package, and reads no
// environment variables.
func TestServerReadsNoConfiguration(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"github.com/spf13/viper", "github.com/spf13/pflag", "flag", "os"} {
				if path == banned {
					t.Errorf("%s imports %q: configuration belongs to cmd/", name, path)
				}
			}
		}
	}
}
