// Command dgeval plays matches between bots in process and reports, per
// agent, the mean score, mean score difference and win rate with 95%
// intervals, plus Bradley-Terry ratings on the Elo scale.
//
//	dgeval -players 4 -agents heuristic,random,random,random -games 10000
//	dgeval -agents heuristic,random,heuristic,random -duplicate -json out.json
//	dgeval -game duel -roundrobin -agents random,heuristic,search -games 1000
//
// With -roundrobin (two-player games) it plays every agent against every
// other in duplicate matches and prints a markdown table of each agent's
// score per game in each seat against each opponent.
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server/wire"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run plays the match the arguments ask for and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	flag := flag.NewFlagSet("dgeval", flag.ContinueOnError)
	flag.SetOutput(stderr)
	reg := games.Default() // this run's games and bots (policies join it below)
	var (
		players   = flag.Int("players", 4, "players per game (3..6)")
		deals     = flag.Int("deals", 0, "deals per game (0 = as many as players)")
		agents    = flag.String("agents", "heuristic,random,random,random", "one bot name per seat, comma-separated (the default game's bots: "+strings.Join(reg.Bots(reg.Names()[0]), ", ")+", policy:<name>)")
		games     = flag.Int("games", 10000, "games to play")
		seed      = flag.Uint64("seed", 1, "seed: the same seed replays the same match")
		bySeat    = flag.Bool("by-seat", false, "also print each agent's record from each seat it held (in the duel, each role)")
		duplicate = flag.Bool("duplicate", false, "replay every deal in every seating: the agents' order rotated, and from 3 players its reverse rotated too (the luck of the deal and of who sits after whom cancels)")
		workers   = flag.Int("workers", 0, "goroutines (0 = GOMAXPROCS); results do not depend on it")
		jsonOut   = flag.String("json", "", "write the summary as JSON to this file")
		csvOut    = flag.String("csv", "", "write every game's totals per agent as CSV to this file")
		policies  = flag.String("policies", "", "directory of trained policies (<name>.onnx), playable as agents \"policy:<name>\"")
		quiet     = flag.Bool("quiet", false, "no progress line")
		game      = flag.String("game", reg.Names()[0], "the game: "+strings.Join(reg.Names(), ", ")+"; -players and -deals, when given, set the game's parameters of those names if it has them, -agents name bots of the game")
		gparams   = flag.String("game-params", "", "that game's parameters, comma-separated k=v (e.g. max_rounds=50)")
		robin     = flag.Bool("roundrobin", false, "two-player games: play every pair of -agents (distinct names) in a duplicate match of -games games (half in each seating, the same deal seeds for every pair) and print a markdown table: the row agent's score per game in each seat against each opponent, with its 95% interval")
		scoresIn  = flag.String("scores", "", "play nothing: summarise the games in this CSV (as -csv writes: game, deal_seed, then one \"i:agent\" column of totals per seat), e.g. games a Python client played")
	)
	if err := flag.Parse(args); err != nil {
		return 2
	}
	set := given(flag) // -players and -deals apply only when given
	if *policies != "" {
		if err := loadPolicies(*policies, reg); err != nil {
			fmt.Fprintln(stderr, "dgeval:", err)
			return 2
		}
	}
	cfg := env.MatchConfig{
		Agents: strings.Split(*agents, ","), Games: *games, Seed: *seed,
		Duplicate: *duplicate, Workers: *workers,
	}
	start := time.Now()
	if !*quiet {
		cfg.Progress = progress(stderr)
	}
	if *robin {
		if *scoresIn != "" || *jsonOut != "" || *csvOut != "" {
			fmt.Fprintln(stderr, "dgeval: -roundrobin prints its table only (no -scores, -json or -csv)")
			return 2
		}
		rr, err := roundRobin(reg, *game, set, *players, *deals, *gparams, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "dgeval:", err)
			return 2
		}
		fmt.Fprintf(stdout, "round robin of %s: %d duplicate games a pair, seed %d, %.1fs\n\n", *game, rr.games, *seed, time.Since(start).Seconds())
		rr.write(stdout)
		return 0
	}
	var res *env.MatchResult
	var err error
	if *scoresIn != "" {
		res, err = readCSV(*scoresIn)
		if err == nil {
			*players = len(res.Agents)
		}
	} else {
		res, err = play(reg, *game, set, *players, *deals, *gparams, cfg)
		if err == nil {
			*players = len(res.Agents)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "dgeval:", err)
		return 2
	}
	stats := res.Summarize()
	ratings := res.Ratings()
	fmt.Fprintf(stdout, "%d games, %d players, seed %d, duplicate %v, %.1fs\n", len(res.Scores), *players, *seed, *duplicate, time.Since(start).Seconds())
	fmt.Fprintf(stdout, "%-12s %5s %20s %20s %18s %8s\n", "agent", "seats", "score/game", "score diff", "win rate", "rating")
	for _, s := range stats {
		fmt.Fprintf(stdout, "%-12s %5d %20s %20s %18s %8.0f\n", s.Name, s.Seats, s.Score, s.Diff, s.Win, ratings[s.Name])
	}
	if *bySeat && *scoresIn == "" {
		fmt.Fprintf(stdout, "%-12s %5s %7s %20s %7s %7s %7s\n", "agent", "seat", "games", "score/game", "wins", "draws", "losses")
		for _, s := range res.BySeat() {
			fmt.Fprintf(stdout, "%-12s %5d %7d %20s %7d %7d %7d\n", s.Name, s.Seat, s.Games, s.Score, s.Wins, s.Draws, s.Games-s.Wins-s.Draws)
		}
	}
	if *jsonOut != "" {
		out := summary{Games: len(res.Scores), Players: *players, Seed: *seed, Duplicate: *duplicate,
			Agents: wire.AgentsOf(stats), Ratings: ratings}
		if *scoresIn == "" {
			for _, s := range res.BySeat() {
				out.BySeat = append(out.BySeat, seatJSON{Agent: s.Agent, Name: s.Name, Seat: s.Seat, Games: s.Games,
					Score: wire.Estimate(s.Score), Wins: s.Wins, Draws: s.Draws, Losses: s.Games - s.Wins - s.Draws})
			}
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "dgeval:", err)
			return 1
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "dgeval:", err)
			return 1
		}
	}
	if *csvOut != "" {
		if err := writeCSV(*csvOut, res); err != nil {
			fmt.Fprintln(stderr, "dgeval:", err)
			return 1
		}
	}
	return 0
}

// summary is the -json output: what other tools (the Python package's
// evaluation) read, so the statistics have one implementation (env's
// Summarize and Ratings). Keys are documented in docs/training.md.
type summary struct {
	Games     int                `json:"games"`
	Players   int                `json:"players"`
	Seed      uint64             `json:"seed"`
	Duplicate bool               `json:"duplicate"`
	Agents    []wire.AgentStats  `json:"agents"`
	Ratings   map[string]float64 `json:"ratings"`
	// BySeat is each agent position's record from each seat it held (in
	// the duel, each role); absent for -scores, whose seating is unknown.
	BySeat []seatJSON `json:"by_seat,omitempty"`
}

// seatJSON is one agent position's record from one seat (env.SeatStats).
type seatJSON struct {
	Agent  int           `json:"agent"` // index into -agents
	Name   string        `json:"name"`
	Seat   int           `json:"seat"`
	Games  int           `json:"games"`
	Score  wire.Estimate `json:"score"`
	Wins   int           `json:"wins"`
	Draws  int           `json:"draws"`
	Losses int           `json:"losses"`
}

// loadPolicies loads the policies of dir as bots of their games in reg.
func loadPolicies(dir string, reg *env.Registry) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	ps, err := policy.LoadFS(reg, root.FS(), nil)
	if err != nil {
		return err
	}
	return policy.Register(reg, ps)
}

// given lists the flags set on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// play plays a match of a game of reg (newGame) through the one arena,
// env.PlayMatchOf.
func play(reg *env.Registry, name string, set map[string]bool, players, deals int, params string, cfg env.MatchConfig) (*env.MatchResult, error) {
	g, err := newGame(reg, name, set, players, deals, params)
	if err != nil {
		return nil, err
	}
	return env.PlayMatchOf(reg, g, cfg)
}

// newGame makes the game of reg the flags ask for: -players and -deals,
// when set, are the game's parameters of those names (the card game's; a
// game without them ignores them, as dgenv.evaluate passes -players for
// every game), -game-params any game's.
func newGame(reg *env.Registry, name string, set map[string]bool, players, deals int, params string) (env.Game, error) {
	typ, err := reg.Lookup(name)
	if err != nil {
		return nil, err
	}
	given := map[string]any{}
	has := func(param string) bool { return slices.Contains(typ.ParamNames(), param) }
	if set["players"] && has("players") {
		given["players"] = players
	}
	if set["deals"] && deals != 0 && has("deals") {
		given["deals"] = deals
	}
	if params != "" {
		for _, kv := range strings.Split(params, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return nil, fmt.Errorf("-game-params %q: want k=<integer>", kv)
			}
			given[k] = n
		}
	}
	return typ.New(given)
}

// readCSV reads what writeCSV writes (games played anywhere): the agents
// from the header's "i:name" columns, one game per row.
func readCSV(path string) (*env.MatchResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 || len(rows[0]) < 4 {
		return nil, fmt.Errorf("%s: want a header game,deal_seed,0:<agent>,1:<agent>,... and at least one game", path)
	}
	res := &env.MatchResult{}
	for i, col := range rows[0][2:] {
		idx, name, ok := strings.Cut(col, ":")
		if !ok || idx != strconv.Itoa(i) || name == "" {
			return nil, fmt.Errorf("%s: column %d is %q, want \"%d:<agent>\"", path, i+2, col, i)
		}
		res.Agents = append(res.Agents, name)
	}
	for k, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			return nil, fmt.Errorf("%s: game row %d has %d fields, want %d", path, k+1, len(row), len(rows[0]))
		}
		seed, err := strconv.ParseUint(row[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: game row %d: deal_seed %q: %w", path, k+1, row[1], err)
		}
		sc := make([]int, len(res.Agents))
		for i := range sc {
			if sc[i], err = strconv.Atoi(row[i+2]); err != nil {
				return nil, fmt.Errorf("%s: game row %d: %s total %q: want an integer", path, k+1, res.Agents[i], row[i+2])
			}
		}
		res.Scores, res.Seeds = append(res.Scores, sc), append(res.Seeds, seed)
	}
	return res, nil
}

// writeCSV writes one row per game: game, deal_seed, then each agent's total.
func writeCSV(path string, res *env.MatchResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	header := []string{"game", "deal_seed"}
	for i, a := range res.Agents {
		header = append(header, fmt.Sprintf("%d:%s", i, a))
	}
	_ = w.Write(header)
	for k, sc := range res.Scores {
		row := []string{strconv.Itoa(k), strconv.FormatUint(res.Seeds[k], 10)}
		for _, x := range sc {
			row = append(row, strconv.Itoa(x))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// progress is a progress line on w.
func progress(w io.Writer) func(done, total int) {
	last := time.Now()
	return func(done, total int) {
		if time.Since(last) > 200*time.Millisecond || done == total {
			last = time.Now()
			fmt.Fprintf(w, "\r%s %d/%d games", bar(done, total), done, total)
			if done == total {
				fmt.Fprintln(w)
			}
		}
	}
}

func bar(done, total int) string {
	const width = 30
	n := done * width / total
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
