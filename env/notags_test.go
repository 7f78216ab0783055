package env_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The engine's types carry no wire names: the server (server/wire) has its
// own wire types and converts, so renaming a Go field here cannot change
// the API. env/policy is exempt: its tags are the model file's metadata
// format, which it reads.
func TestEngineTypesCarryNoWireTags(t *testing.T) {
	for _, root := range []string{".", "../obs"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "policy" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
					if tag := fld.Tag.Value; strings.Contains(tag, "json:") || strings.Contains(tag, "msgpack:") {
						t.Errorf("%s: field %v has the wire tag %s", path, fld.Names, tag)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
