// Reading game records (docs/api.md, "GET /v1/sessions/{id}/envs/{k}/record")
// for display. The server decides what is legal and what a deal scores; the
// page replays a record's plays only to show them: the trick as it forms,
// who takes what, the prize piles. At the end of every deal the page checks
// its replay against the scores in the record (checkDeal).

// The five colours, each with a name and a shape, so that a card never
// depends on colour vision: "14 ◆ blue".
export const COLOURS = [
  { name: 'red', symbol: '●' },
  { name: 'yellow', symbol: '▲' },
  { name: 'green', symbol: '■' },
  { name: 'blue', symbol: '◆' },
  { name: 'purple', symbol: '★' },
];

export const colourOf = (card) => Math.floor(card / 18);
export const valueOf = (card) => (card % 18) + 1;
export const cardName = (card) => `${COLOURS[colourOf(card)].name} ${valueOf(card)}`;

// Hand order: by colour, then value.
export const byCard = (a, b) => a - b;

// trickOutcome names the highest and lowest card of a complete trick (indexes
// into plays, [[seat, card], ...] in play order). Highest: highest value,
// among equal values the one played last; lowest likewise. When every card
// has the same value the last is the highest and the one before the lowest.
export function trickOutcome(plays) {
  let hi = 0;
  let lo = 0;
  for (let i = 1; i < plays.length; i++) {
    const v = valueOf(plays[i][1]);
    if (v >= valueOf(plays[hi][1])) hi = i;
    if (v <= valueOf(plays[lo][1])) lo = i;
  }
  if (hi === lo) lo = plays.length - 2;
  return { hi, lo };
}

// colourScore: 1 or 2 cards of a colour score their face values, 3 or more
// one point each, none 0.
export function colourScore(cards) {
  if (cards.length >= 3) return cards.length;
  return cards.reduce((s, c) => s + valueOf(c), 0);
}

// dealView is deal (a record's deal) after its first n plays: the cards
// left in each hand, the finished tricks with their outcome, the trick in
// progress, the prize piles, the seat to act and the points so far.
export function dealView(players, deal, n) {
  const P = players;
  const hands = deal.hands.map((h) => new Set(h));
  const prizes = Array.from({ length: P }, () => []);
  const tricks = [];
  let leader = (deal.dealer + 1) % P;
  let current = [];
  const plays = deal.plays.slice(0, n);
  for (let t = 0; t * P < plays.length; t++) {
    const trick = plays.slice(t * P, t * P + P);
    for (const [seat, card] of trick) hands[seat].delete(card);
    if (trick.length < P) {
      current = trick;
      break;
    }
    const { hi, lo } = trickOutcome(trick);
    const high = trick[hi];
    const low = trick[lo];
    prizes[low[0]].push(high[1]);
    for (let i = 0; i < trick.length; i++) if (i !== hi) prizes[high[0]].push(trick[i][1]);
    tricks.push({ leader, plays: trick, high, low });
    leader = high[0];
  }
  const total = deal.hands[0].length * P;
  const over = plays.length >= total;
  const toAct = over ? -1 : current.length ? (current[current.length - 1][0] + 1) % P : leader;
  const piles = prizes.map((cards) => {
    const byColour = COLOURS.map((_, c) => cards.filter((x) => colourOf(x) === c).sort(byCard));
    const scores = byColour.map(colourScore);
    return { byColour, scores, points: scores.reduce((a, b) => a + b, 0) };
  });
  return {
    n: plays.length,
    total,
    over,
    dealer: deal.dealer,
    leader,
    toAct,
    hands: hands.map((h) => [...h].sort(byCard)),
    tricks,
    current,
    lastTrick: tricks.length ? tricks[tricks.length - 1] : null,
    piles,
  };
}

// checkDeal compares the page's replay of a finished deal with the scores
// the server recorded; it returns a message when they differ.
export function checkDeal(players, deal, dealIndex) {
  if (!deal.scores) return null;
  const v = dealView(players, deal, deal.plays.length);
  const mine = v.piles.map((p) => p.points);
  if (mine.every((x, i) => x === deal.scores[i])) return null;
  return `deal ${dealIndex + 1}: the page counts ${mine.join(', ')} but the server recorded ${deal.scores.join(', ')}`;
}

// Positions: a game is shown at (deal, n), n plays into that deal. These
// walk a record's positions in order, over every deal.
export function lastPosition(rec) {
  const d = rec.deals.length - 1;
  return { deal: d, n: rec.deals[d].plays.length };
}

export function nextPosition(rec, pos) {
  if (pos.n < rec.deals[pos.deal].plays.length) return { deal: pos.deal, n: pos.n + 1 };
  if (pos.deal + 1 < rec.deals.length) return { deal: pos.deal + 1, n: 0 };
  return null;
}

export function prevPosition(rec, pos) {
  if (pos.n > 0) return { deal: pos.deal, n: pos.n - 1 };
  if (pos.deal > 0) return { deal: pos.deal - 1, n: rec.deals[pos.deal - 1].plays.length };
  return null;
}

export const samePosition = (a, b) => a.deal === b.deal && a.n === b.n;
export const beforePosition = (a, b) => a.deal < b.deal || (a.deal === b.deal && a.n < b.n);

// Index of a position among all positions of the game (for a slider).
export function positionIndex(rec, pos) {
  let i = 0;
  for (let d = 0; d < pos.deal; d++) i += rec.deals[d].plays.length + 1;
  return i + pos.n;
}

export function positionAt(rec, index) {
  let i = index;
  for (let d = 0; d < rec.deals.length; d++) {
    const len = rec.deals[d].plays.length;
    if (i <= len) return { deal: d, n: i };
    i -= len + 1;
  }
  return lastPosition(rec);
}

export const positionCount = (rec) => positionIndex(rec, lastPosition(rec)) + 1;

// Game totals before deal d: the server's scores of the deals before it.
export function totalsBefore(rec, d) {
  const P = rec.game.players;
  const t = new Array(P).fill(0);
  for (let i = 0; i < d; i++) {
    const s = rec.deals[i].scores;
    if (s) for (let p = 0; p < P; p++) t[p] += s[p];
  }
  return t;
}

// The engine's bounds (env/params.go, obs.MaxDeals): a record outside them
// is not one the server wrote, and rendering it could hang the tab (a deal
// column for each of game.deals).
export const MAX_DEALS = 90;
// MAX_RECORD_BYTES bounds a game record file: the longest game (6 players,
// 90 deals) is about 200 KB of JSON.
export const MAX_RECORD_BYTES = 4 << 20;

// asGameRecord accepts what a user may load as a game: a record route's
// answer ({finished, current}: the finished game, else the one in
// progress) or one game record ({game, deals, totals}). It checks every
// size and type the page reads before anything is drawn, and throws a
// readable error for anything else.
export function asGameRecord(data) {
  if (data && typeof data === 'object' && ('finished' in data || 'current' in data)) {
    data = data.finished || data.current;
  }
  const bad = (why) => new Error(`not a dgenv game record: ${why}`);
  const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
  const integers = (xs, n) => Array.isArray(xs) && xs.length === n && xs.every(Number.isInteger);
  if (!isObject(data)) throw bad('expected an object with "game" and "deals"');
  const g = data.game;
  if (!isObject(g) || !Number.isInteger(g.players) || g.players < 3 || g.players > 6) throw bad('"game.players" must be 3..6');
  if (!Number.isInteger(g.deals) || g.deals < 1 || g.deals > MAX_DEALS) throw bad(`"game.deals" must be 1..${MAX_DEALS}`);
  if (!Array.isArray(data.deals) || data.deals.length === 0) throw bad('"deals" must be a non-empty list');
  if (data.deals.length > g.deals) throw bad(`"deals" lists ${data.deals.length} deals, the game has ${g.deals}`);
  const P = g.players;
  const deckMax = 3 * P;
  if (data.totals != null && !integers(data.totals, P)) throw bad(`"totals" must list ${P} integers`);
  data.deals.forEach((d, i) => {
    const where = `deal ${i + 1}`;
    if (!isObject(d)) throw bad(`${where} is not an object`);
    if (!Number.isInteger(d.dealer) || d.dealer < 0 || d.dealer >= P) throw bad(`${where}: "dealer" must be 0..${P - 1}`);
    if (!Array.isArray(d.hands) || d.hands.length !== P) throw bad(`${where}: "hands" must list ${P} hands`);
    const held = new Map();
    d.hands.forEach((h, s) => {
      if (!Array.isArray(h)) throw bad(`${where}: hand ${s} is not a list`);
      if (h.length > 90) throw bad(`${where}: hand ${s} holds ${h.length} cards`);
      for (const c of h) {
        if (!Number.isInteger(c) || c < 0 || c > 89 || valueOf(c) > deckMax) throw bad(`${where}: card ${JSON.stringify(c)} is not in the deck`);
        if (held.has(c)) throw bad(`${where}: card ${c} is dealt twice`);
        held.set(c, s);
      }
    });
    if (!Array.isArray(d.plays) || d.plays.length > held.size) throw bad(`${where}: "plays" must be a list of at most the ${held.size} cards dealt`);
    const seen = new Set();
    d.plays.forEach((p, k) => {
      if (!Array.isArray(p) || p.length !== 2 || held.get(p[1]) !== p[0] || seen.has(p[1])) {
        throw bad(`${where}: play ${k + 1} ${JSON.stringify(p)} is not a card of that seat's hand`);
      }
      seen.add(p[1]);
    });
    if (d.scores != null && !integers(d.scores, P)) throw bad(`${where}: "scores" must list ${P} integers`);
    if (d.done != null && typeof d.done !== 'boolean') throw bad(`${where}: "done" must be true or false`);
  });
  return data;
}

// Tensors of a batch ({"dtype", "shape", "data": base64}) as typed arrays.
const DTYPES = {
  '<u1': Uint8Array, '|u1': Uint8Array, '<i1': Int8Array, '|i1': Int8Array,
  '<i4': Int32Array, '<f4': Float32Array, '<i8': BigInt64Array,
};

export function tensor(t) {
  const T = DTYPES[t.dtype];
  if (!T) throw new Error(`unknown dtype ${t.dtype}`);
  const bin = atob(t.data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const a = new T(bytes.buffer); // the page assumes a little-endian machine, as every browser platform is
  return T === BigInt64Array ? Array.from(a, Number) : Array.from(a);
}
