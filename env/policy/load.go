package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// NamePattern is the allow-list for policy names: the file <name>.onnx is
// served as "policy:<name>".
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// MaxModelBytes bounds one model file.
const MaxModelBytes = 256 << 20

// LoadFS loads every <name>.onnx at the top of fsys (pass an os.Root's FS
// so that no path, link included, can leave the directory); each file's
// game is looked up in reg (Parse). pins maps names
// to hex SHA-256 digests: a pinned file must match, and a pin without its
// file is an error. A file name outside NamePattern, an unreadable or
// invalid model, is an error naming the file: nothing is loaded half.
func LoadFS(reg *env.Registry, fsys fs.FS, pins map[string]string) (map[string]*Policy, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("policies: %w", err)
	}
	out := map[string]*Policy{}
	for _, e := range entries {
		file := e.Name()
		name, ok := strings.CutSuffix(file, ".onnx")
		if !ok || e.IsDir() {
			continue
		}
		if !NamePattern.MatchString(name) {
			return nil, fmt.Errorf("policies: file %q: name must match %s", file, NamePattern)
		}
		// Stat follows a link (inside fsys): what is read must be a regular
		// file. A FIFO would block the read, and start-up, for ever.
		info, err := fs.Stat(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("policies: %s: %w", file, err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("policies: %s: not a regular file (%v)", file, info.Mode().Type())
		}
		if info.Size() > MaxModelBytes {
			return nil, fmt.Errorf("policies: %s: %d bytes, at most %d", file, info.Size(), MaxModelBytes)
		}
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("policies: %s: %w", file, err)
		}
		sum := sha256.Sum256(data)
		if pin, ok := pins[name]; ok {
			if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, pin) {
				return nil, fmt.Errorf("policies: %s: SHA-256 %s does not match the pinned %s", file, got, pin)
			}
		}
		p, err := parse(reg, name, data, sum)
		if err != nil {
			return nil, fmt.Errorf("policies: %s: %w", file, err)
		}
		out[name] = p
	}
	var missing []string
	for name := range pins {
		if out[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("policies: pinned but not found: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Register adds the bots of ps to reg, each under its policy's game:
// "policy:<name>" (greedy) for every policy, and the search it guides,
// "search:policy:<name>", for card-game policies (Guided) and for policies
// of a game whose "search" is the generic env.Search (GuidedSearch). Whoever serves the
// policies (the server, libdgenv, dgeval) calls it with the registry the
// policies were loaded with.
func Register(reg *env.Registry, ps map[string]*Policy) error {
	names := make([]string, 0, len(ps))
	for name := range ps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := ps[name]
		game := p.meta.GameName
		if err := reg.RegisterBot(game, "policy:"+name, func(g env.Game) (env.Bot, error) {
			if err := p.Check(g); err != nil {
				return nil, err
			}
			return Bot{Policy: p, Greedy: true}, nil
		}); err != nil {
			return err
		}
		if game != card.GameName {
			if f, ok := guidedSearchFactory(reg, game, p); ok {
				if err := reg.RegisterBot(game, "search:policy:"+name, f); err != nil {
					return err
				}
			}
			continue
		}
		if err := reg.RegisterBot(game, "search:policy:"+name, func(g env.Game) (env.Bot, error) {
			if err := p.Check(g); err != nil {
				return nil, err
			}
			return NewGuided(p), nil
		}); err != nil {
			return err
		}
	}
	return nil
}
