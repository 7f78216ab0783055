package env_test

// The layering of the module (STYLE.md "The shape of the project"), checked
// on the import graph as Tailscale's depaware checks a binary's
// dependencies: `go list -deps -json` over the whole module, once for a
// plain build and once with -tags testgame (which adds the test game to
// env/games). The rules:
//
//  1. The core (env) depends on no game and on nothing of the module but
//     obs: a game plugs into the core, never the reverse.
//  2. A game (every package directly under env/ but the non-games below)
//     imports only the core, obs and the standard library: no other game,
//     no wiring, no third-party package.
//  3. server/... and cmd/... import no game package: they reach games
//     through the registry (env, env/games, env/policy, obs), and what a
//     tool needs of a game beyond the interface comes through the core's
//     optional interfaces (env.ActionValuer, env.FieldStarter, ...).
//  4. env/... and obs/... do no I/O (STYLE.md habit 1): none of them
//     imports os, log, log/slog, flag or net/http itself, and none depends
//     on net/http, gin, msgpack or viper at all (fmt depends on os, so os is
//     checked on direct imports only).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/davidgoliath/dgenv"

// nonGames are the packages directly under env/ that are not games: the
// conformance helpers, the wiring that names the shipped games, and the
// trained policies (bots of any game, the card game's guided search).
var nonGames = []string{module + "/env/envtest", module + "/env/games", module + "/env/policy"}

// forbiddenDeps may be no dependency of env/... or obs/... at all.
var forbiddenDeps = []string{"net/http", "github.com/gin-gonic/gin", "github.com/vmihailenco/msgpack/v5", "github.com/spf13/viper"}

// forbiddenDirect may not be imported by a package of env/... or obs/...
// itself.
var forbiddenDirect = []string{"os", "log", "log/slog", "flag", "net/http"}

type goPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// listModule is `go list -deps -json` over the whole module with tags.
func listModule(t *testing.T, tags string) map[string]*goPackage {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go") // go test runs without go on PATH
	}
	args := []string{"list", "-deps", "-json=ImportPath,Standard,Imports,Deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, module+"/...")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	pkgs := map[string]*goPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	for _, must := range []string{module + "/env", module + "/obs", module + "/env/card", module + "/server", module + "/cmd/dgserver"} {
		if pkgs[must] == nil {
			t.Fatalf("go list -deps printed %d packages without %s", len(pkgs), must)
		}
	}
	return pkgs
}

// gamePackages are the games: the packages directly under env/ but the
// non-games.
func gamePackages(pkgs map[string]*goPackage) []string {
	var games []string
	for path := range pkgs {
		rest, ok := strings.CutPrefix(path, module+"/env/")
		if ok && !strings.Contains(rest, "/") && !slices.Contains(nonGames, path) {
			games = append(games, path)
		}
	}
	slices.Sort(games)
	return games
}

func TestLayering(t *testing.T) {
	for _, tags := range []string{"", "testgame"} {
		t.Run("tags "+tags, func(t *testing.T) {
			pkgs := listModule(t, tags)
			games := gamePackages(pkgs)
			for _, want := range []string{"card", "duel", "testgame"} {
				if !slices.Contains(games, module+"/env/"+want) {
					t.Fatalf("games found = %v, want env/%s among them", games, want)
				}
			}
			inModule := func(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }

			t.Run("the core depends on no game and on nothing of the module but obs", func(t *testing.T) {
				for _, dep := range pkgs[module+"/env"].Deps {
					if inModule(dep) && dep != module+"/obs" {
						t.Errorf("env depends on %s", dep)
					}
				}
			})

			t.Run("a game imports only the core, obs and the standard library", func(t *testing.T) {
				for _, g := range games {
					for _, imp := range pkgs[g].Imports {
						if imp == module+"/env" || imp == module+"/obs" {
							continue
						}
						if p := pkgs[imp]; p == nil || !p.Standard {
							t.Errorf("%s imports %s", g, imp)
						}
					}
				}
			})

			t.Run("server and cmd import no game", func(t *testing.T) {
				for path, p := range pkgs {
					if !strings.HasPrefix(path, module+"/server") && !strings.HasPrefix(path, module+"/cmd/") {
						continue
					}
					var direct []string
					for _, imp := range p.Imports {
						if slices.Contains(games, imp) {
							direct = append(direct, imp)
						}
					}
					if len(direct) > 0 {
						t.Errorf("%s imports the game(s) %v: reach games through the registry (env/games)", path, direct)
					}
				}
			})

			t.Run("env and obs do no I/O", func(t *testing.T) {
				for path, p := range pkgs {
					if !strings.HasPrefix(path, module+"/env") && !strings.HasPrefix(path, module+"/obs") {
						continue
					}
					for _, imp := range p.Imports {
						if slices.Contains(forbiddenDirect, imp) {
							t.Errorf("%s imports %s", path, imp)
						}
					}
					for _, dep := range p.Deps {
						if slices.Contains(forbiddenDeps, dep) || strings.HasPrefix(dep, "net/http/") ||
							strings.Contains(dep, "msgpack") || strings.Contains(dep, "viper") || strings.Contains(dep, "gin-gonic") {
							t.Errorf("%s depends on %s", path, dep)
						}
					}
				}
			})
		})
	}
}
