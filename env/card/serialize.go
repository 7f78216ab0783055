package card

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSerialization is wrapped by every Deserialize error.
var ErrBadSerialization = errors.New("bad serialized state")

const serialHeader = "david-goliath v1"

// Serialize writes the state as text: the parameters, the RNG that deals the
// coming deals, and every deal so far (its hands and plays). Deserialize
// replays it, checking every play, so a damaged text is refused rather than
// turned into an impossible state.
//
//	david-goliath v1
//	params 4 4 0              players deals first_dealer
//	rng <4 hex words>
//	deal <hands: 15 ids per seat, seats split by '|'>
//	plays <card ids in play order>
//	pending <hands>           explicit deals not yet reached (NewStateFromDeals)
func (s *State) Serialize() string {
	if s.rec == nil {
		panic("env: Serialize on a state that keeps no record")
	}
	s.syncRecord()
	var sb strings.Builder
	p := s.game.params
	w := s.rng.Words()
	fmt.Fprintf(&sb, "%s\n%s\nrng %x %x %x %x\n", serialHeader, p.paramsLine(), w[0], w[1], w[2], w[3])
	writeHands := func(word string, h *handsArr) {
		sb.WriteString(word)
		for seat := range p.Players {
			if seat > 0 {
				sb.WriteString(" |")
			}
			for _, c := range h[seat] {
				sb.WriteByte(' ')
				sb.WriteString(strconv.Itoa(int(c)))
			}
		}
	}
	for i := range s.rec.Deals {
		d := &s.rec.Deals[i]
		writeHands("deal", &d.Hands)
		sb.WriteString("\nplays")
		for _, pl := range d.Plays[:d.NumPlays] {
			sb.WriteByte(' ')
			sb.WriteString(strconv.Itoa(int(pl.Card)))
		}
		sb.WriteByte('\n')
	}
	for _, f := range s.forced {
		writeHands("pending", &f[0])
		sb.WriteByte('\n')
	}
	return sb.String()
}

// DeserializeState rebuilds a state written by Serialize. The parameters in
// the text must be this game's.
func (g *Game) DeserializeState(text string) (*State, error) {
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrBadSerialization, line, fmt.Sprintf(format, args...))
	}
	lines, err := textLines(text)
	if err != nil {
		return nil, err
	}
	if len(lines) < 3 || lines[0] != serialHeader {
		return nil, bad(1, "want header %q, params and rng lines", serialHeader)
	}
	p, err := g.readParamsLine(lines[1])
	if err != nil {
		return nil, bad(2, "%v", err)
	}
	var rng RNG
	var w [4]uint64
	if n, err := fmt.Sscanf(lines[2], "rng %x %x %x %x", &w[0], &w[1], &w[2], &w[3]); n != 4 || err != nil {
		return nil, bad(3, "want \"rng\" and four hex words")
	}
	rng.SetWords(w)
	if w == [4]uint64{} {
		// xoshiro's all-zero state only ever yields 0: the next shuffle would never end.
		return nil, bad(3, "rng state is all zero")
	}
	rest := lines[3:]
	var pending []Hands
	for len(rest) > 0 && strings.HasPrefix(rest[len(rest)-1], "pending") {
		h, err := parseHands(strings.TrimPrefix(rest[len(rest)-1], "pending"))
		if err != nil {
			return nil, bad(3+len(rest), "%v", err)
		}
		pending = append([]Hands{h}, pending...)
		rest = rest[:len(rest)-1]
	}
	if len(rest)%2 != 0 || len(rest) == 0 || len(rest)/2 > p.Deals {
		return nil, bad(4, "want a deal line and a plays line per deal, 1..%d deals", p.Deals)
	}
	deals := make([]Hands, len(rest)/2)
	plays := make([][]Action, len(rest)/2)
	for k := range deals {
		ln := 4 + 2*k
		dl, pl := rest[2*k], rest[2*k+1]
		body, ok := strings.CutPrefix(dl, "deal")
		if !ok {
			return nil, bad(ln, "want a deal line")
		}
		h, err := parseHands(body)
		if err != nil {
			return nil, bad(ln, "%v", err)
		}
		deals[k] = h
		body, ok = strings.CutPrefix(pl, "plays")
		if !ok {
			return nil, bad(ln+1, "want a plays line")
		}
		ids, err := parseIDs(body)
		if err != nil {
			return nil, bad(ln+1, "%v", err)
		}
		full := p.Players * TricksPerDeal
		if len(ids) > full || (k < len(deals)-1 && len(ids) != full) {
			return nil, bad(ln+1, "%d plays in deal %d", len(ids), k)
		}
		for _, c := range ids {
			plays[k] = append(plays[k], int(c))
		}
	}
	if len(deals)+len(pending) > p.Deals {
		return nil, bad(4, "%d deals for a game of %d", len(deals)+len(pending), p.Deals)
	}
	s, err := g.NewStateFromDeals(0, append(deals, pending...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSerialization, err)
	}
	for k := range plays {
		for i, a := range plays[k] {
			if err := s.ApplyAction(a); err != nil {
				return nil, fmt.Errorf("%w: deal %d play %d: %v", ErrBadSerialization, k, i, err)
			}
		}
	}
	if k := len(deals) - 1; len(plays[k]) == p.Players*TricksPerDeal && !s.terminal {
		return nil, bad(4+2*k, "deal %d is complete but the next deal is missing", k)
	}
	if len(s.forced) != len(pending) {
		return nil, bad(4, "pending deals do not follow the last deal")
	}
	s.rng = rng
	return s, nil
}

// The text forms of this package (Serialize's, and ChanceState's) share
// their line reading and their params line.

// textLines splits a serialized text into its non-blank lines, trimmed.
func textLines(text string) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 4096), 1<<20)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSerialization, err)
	}
	return lines, nil
}

// paramsLine is the params line of a serialized state of a game of p.
func (p Params) paramsLine() string {
	return fmt.Sprintf("params %d %d %d", p.Players, p.Deals, p.FirstDealer)
}

// readParamsLine reads a params line and checks that it is g's.
func (g *Game) readParamsLine(line string) (Params, error) {
	var p Params
	if n, err := fmt.Sscanf(line, "params %d %d %d", &p.Players, &p.Deals, &p.FirstDealer); n != 3 || err != nil {
		return p, errors.New("want \"params <players> <deals> <first_dealer>\"")
	}
	if p != g.params {
		return p, fmt.Errorf("parameters %+v are not this game's %+v", p, g.params)
	}
	return p, nil
}

func parseHands(s string) (Hands, error) {
	var h Hands
	for _, part := range strings.Split(s, "|") {
		ids, err := parseIDs(part)
		if err != nil {
			return nil, err
		}
		h = append(h, ids)
	}
	return h, nil
}

func parseIDs(s string) ([]Card, error) {
	var out []Card
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= NumActions {
			return nil, fmt.Errorf("card id %q: want 0..%d", f, NumActions-1)
		}
		out = append(out, Card(n))
	}
	return out, nil
}
