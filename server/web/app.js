// The dgserver browser app: play David & Goliath against the bots, and
// watch finished games. Plain JavaScript modules with no build step (see
// docs/web.md). Everything goes through the public API (api.js), through a
// session like any other client's: the human seats are the session's
// learner seats, each bot seat's bot named in its opponents, num_envs 1.

import { Api, ApiError } from './api.js';
import {
  COLOURS, colourOf, valueOf, cardName, dealView, checkDeal, asGameRecord, MAX_RECORD_BYTES, tensor,
  lastPosition, nextPosition, prevPosition, beforePosition, positionIndex, positionAt,
  positionCount, totalsBefore,
} from './game.js';
import {
  DUEL, initDuel, newDuel, setDuelBots, openDuelWatch, closeDuelWatch, duelWatching, duelWatchMove, watchDuelSession,
  watchDuelFile,
} from './duel.js';

const $ = (id) => document.getElementById(id);
const api = new Api();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The bots are those the server offers for the card game (GET /v1/games);
// these are described, and listed first. A bot of a trained policy
// (policy:<name>, search:policy:<name>) is offered for the player count of
// its policy (GET /v1/policies).
const GAME = 'david_goliath';
const BUILTIN_BOTS = [
  { bot: 'heuristic', label: 'heuristic (rules of thumb)' },
  { bot: 'search', label: 'search (looks ahead)' },
  { bot: 'random', label: 'random' },
];

const SETUP_KEY = 'dgenv-setup';
const GAME_KEY = 'dgenv-game'; // the game chosen in the setup: GAME or DUEL
const YOU = 'you'; // a seat's choice: a person at this screen, or a bot's name
const MAX_SEATS = 6;

const st = {
  policies: [], // GET /v1/policies
  bots: BUILTIN_BOTS.map((b) => b.bot), // GET /v1/games: the card game's bots
  connected: false, // the policies are known
  seats: [YOU, 'heuristic', 'heuristic', 'heuristic', 'heuristic', 'heuristic'], // each seat's choice: YOU or a bot
  session: null, // { id, setup }
  batch: null, // the last reset/step answer, decoded
  game: null, // the game record the table follows
  pos: null, // the position shown: { deal, n }
  gen: 0, // bumped to stop a running animation
  skip: false, // "Show now": finish the running animation at once
  mismatch: null,
  watch: null, // { game, pos, names }
};

// ---------- small DOM helpers ----------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

function setState(s) {
  document.body.dataset.state = s;
}

function showError(msg) {
  const b = $('banner');
  b.textContent = msg;
  b.hidden = !msg;
}

function errorText(e) {
  if (e instanceof ApiError) return `${e.message} (${e.status ? `HTTP ${e.status}, ` : ''}${e.code})`;
  return String(e && e.message ? e.message : e);
}

// cardEl draws a card: its value, its colour's shape and name.
function cardEl(card, opts = {}) {
  const c = colourOf(card);
  const tag = opts.button ? 'button' : 'span';
  const attrs = {
    class: `card c${c}${opts.small ? ' small' : ''}${opts.extra ? ` ${opts.extra}` : ''}`,
    'data-card': String(card),
    title: cardName(card),
  };
  if (opts.button) {
    attrs.type = 'button';
    attrs['aria-label'] = cardName(card) + (opts.disabled ? ' (cannot be played)' : '');
    attrs.disabled = !!opts.disabled;
  } else {
    attrs['aria-label'] = cardName(card);
    attrs.role = 'img';
  }
  return el(tag, attrs,
    el('span', { class: 'v', text: String(valueOf(card)) }),
    el('span', { class: 's', text: COLOURS[c].symbol, 'aria-hidden': 'true' }),
    el('span', { class: 'n', text: COLOURS[c].name, 'aria-hidden': 'true' }));
}

// ---------- rendering shared by Play and Watch ----------

// renderTable draws the game at pos into the trick area, the seat panels,
// the score table and the trick log.
function renderTable(ids, game, pos, names, opts) {
  const P = game.game.players;
  const deal = game.deals[pos.deal];
  const v = dealView(P, deal, pos.n);
  const before = totalsBefore(game, pos.deal);
  const dealScores = v.over && deal.scores ? deal.scores : null;

  // The trick: the one forming, or the last one taken with its outcome.
  const trick = $(ids.trick);
  trick.replaceChildren();
  const showing = v.current.length || !v.lastTrick ? { plays: v.current, done: null } : { plays: v.lastTrick.plays, done: v.lastTrick };
  const head = v.current.length
    ? `Trick ${v.tricks.length + 1}: ${names[v.current[0][0]]} led ${COLOURS[colourOf(v.current[0][1])].name}`
    : showing.done
      ? `Trick ${v.tricks.length} taken`
      : `Trick 1: ${names[v.leader]} leads`;
  trick.append(el('h2', { text: head }));
  const row = el('div', { class: 'trick-cards' });
  showing.plays.forEach(([seat, card], i) => {
    let tag = '';
    if (showing.done) {
      if (showing.done.high[1] === card) tag = 'highest';
      else if (showing.done.low[1] === card) tag = 'lowest';
    }
    row.append(el('div', { class: `played${tag ? ` ${tag}` : ''}`, 'data-seat': String(seat) },
      cardEl(card), el('span', { class: 'who', text: shortName(names[seat]) }),
      tag ? el('span', { class: 'tag', text: tag }) : null));
  });
  if (!showing.plays.length) row.append(el('p', { class: 'empty', text: 'No card played yet.' }));
  trick.append(row);
  if (showing.done) trick.append(el('p', { class: 'outcome', text: outcomeText(showing.done, names, P) }));

  // The seats.
  const seats = $(ids.seats);
  seats.replaceChildren();
  for (let s = 0; s < P; s++) {
    const badges = [];
    if (deal.dealer === s) badges.push(el('span', { class: 'badge dealer', text: 'dealer' }));
    if (!v.over && v.leader === s) badges.push(el('span', { class: 'badge leader', text: 'leads' }));
    if (!v.over && v.toAct === s) badges.push(el('span', { class: 'badge turn', text: 'to play' }));
    const handCards = v.hands[s];
    const hand = opts.faceUp(s)
      ? el('div', { class: 'mini-hand' }, handCards.map((c) => cardEl(c, { small: true })))
      : el('p', { class: 'count', text: `${handCards.length} card${handCards.length === 1 ? '' : 's'} in hand` });
    const pile = v.piles[s];
    const prizeRows = pile.byColour.map((cards, c) => (cards.length
      ? el('li', { class: `prize c${c}` },
        el('span', { class: 'pc', title: COLOURS[c].name }, `${COLOURS[c].symbol} `, el('span', { class: 'cn', text: COLOURS[c].name })),
        el('span', { class: 'pv', text: cards.map(valueOf).join(' ') }),
        el('span', { class: 'ps', text: `${pile.scores[c]}`, title: cards.length >= 3 ? '3 or more cards: 1 point each' : 'face values' }))
      : null)).filter(Boolean);
    const dealPts = dealScores ? dealScores[s] : pile.points;
    seats.append(el('div', { class: `seat${v.toAct === s ? ' acting' : ''}${opts.mine && opts.mine(s) ? ' mine' : ''}`, 'data-seat': String(s) },
      el('div', { class: 'seat-head' }, el('strong', {}, shortName(names[s]), kindOf(names[s]) ? el('span', { class: 'kind', text: kindOf(names[s]) }) : null), ...badges),
      hand,
      prizeRows.length ? el('ul', { class: 'prizes' }, prizeRows) : el('p', { class: 'count', text: 'No prizes yet' }),
      el('p', { class: 'seat-score' },
        el('span', {}, 'Deal ', el('b', { 'data-deal-points': String(s), text: String(dealPts) })),
        el('span', {}, 'Game ', el('b', { 'data-game-points': String(s), text: String(before[s] + (dealScores ? dealScores[s] : 0)) })))));
  }

  renderScores($(ids.scores), game, pos, v, names);
  renderLog($(ids.log), v, names, P);
  return v;
}

// "Seat 1 (heuristic)" is shown as "Seat 1" with "heuristic" beside it.
const shortName = (name) => name.replace(/ \(.*\)$/, '');
const kindOf = (name) => (/ \((.*)\)$/.exec(name) || [])[1] || '';

// Words for a seat in a sentence: "You" is a person at this screen.
const takes = (name) => (name === 'You' ? 'You take' : `${name} takes`);
const whose = (name) => (name === 'You' ? 'your' : `${name}'s`);

function outcomeText(t, names, P) {
  const [hs, hc] = t.high;
  const [ls, lc] = t.low;
  return `Highest: ${whose(names[hs])} ${cardName(hc)}, so ${takes(names[hs]).replace(/^You/, 'you')} the other ${P - 1} cards and lead${names[hs] === 'You' ? '' : 's'} next. ` +
    `Lowest: ${whose(names[ls])} ${cardName(lc)}, so ${takes(names[ls]).replace(/^You/, 'you')} the ${cardName(hc)}.`;
}

// renderScores: deal columns (the server's scores; the deal in progress in
// parentheses, as the page counts it so far) and the game totals.
function renderScores(table, game, pos, v, names) {
  const P = game.game.players;
  const D = game.game.deals;
  table.replaceChildren();
  const head = el('tr', {}, el('th', { text: '' }));
  for (let d = 0; d < D; d++) head.append(el('th', { text: `D${d + 1}`, title: `deal ${d + 1}` }));
  head.append(el('th', { text: 'Total' }));
  table.append(el('thead', {}, head));
  const totals = totalsBefore(game, pos.deal);
  const body = el('tbody');
  for (let s = 0; s < P; s++) {
    const tr = el('tr', {}, el('th', { text: shortName(names[s]), title: names[s] }));
    let total = totals[s];
    for (let d = 0; d < D; d++) {
      let cell = '';
      let cls = '';
      const deal = game.deals[d];
      if (d < pos.deal && deal.scores) cell = String(deal.scores[s]);
      else if (d === pos.deal) {
        if (v.over && deal.scores) {
          cell = String(deal.scores[s]);
          total += deal.scores[s];
        } else {
          cell = `(${v.piles[s].points})`;
          cls = 'live';
        }
      }
      tr.append(el('td', { class: cls, 'data-deal': String(d), 'data-seat': String(s), text: cell }));
    }
    tr.append(el('td', { class: 'total', 'data-total': String(s), text: String(total) }));
    body.append(tr);
  }
  table.append(body);
}

// renderLog lists the tricks of the deal so far: cards, who took what, and
// every seat's points after the trick.
function renderLog(ol, v, names, P) {
  ol.replaceChildren();
  const taken = Array.from({ length: P }, () => []);
  v.tricks.forEach((t, i) => {
    taken[t.low[0]].push(t.high[1]);
    for (const [, c] of t.plays) if (c !== t.high[1]) taken[t.high[0]].push(c);
    const pts = taken.map((cards) => COLOURS.reduce((sum, _, col) => {
      const cs = cards.filter((x) => colourOf(x) === col);
      return sum + (cs.length >= 3 ? cs.length : cs.reduce((a, x) => a + valueOf(x), 0));
    }, 0));
    ol.prepend(el('li', { 'data-trick': String(i), value: String(i + 1) },
      el('span', { class: 'log-cards' }, t.plays.map(([, c]) => cardEl(c, { small: true, extra: c === t.high[1] ? 'hi' : c === t.low[1] ? 'lo' : '' }))),
      el('span', { class: 'log-text', text: `${takes(shortName(names[t.high[0]]))} ${P - 1}, ${takes(shortName(names[t.low[0]])).replace(/^You/, 'you')} ${cardName(t.high[1])}` }),
      el('span', { class: 'log-pts', text: `points: ${pts.join(' · ')}` })));
  });
  if (!v.tricks.length) ol.append(el('li', { class: 'empty', text: 'None yet.' }));
}

// ---------- Play ----------

function readSetup() {
  const players = Number($('players').value);
  const seats = st.seats.slice(0, players);
  const humans = [];
  seats.forEach((c, s) => { if (c === YOU) humans.push(s); });
  return { players, deals: Number($('deals').value), seats, humans };
}

const sameSetup = (a, b) => a && b && a.players === b.players && a.deals === b.deals && a.seats.join() === b.seats.join();

function saveSetup() {
  const s = readSetup();
  localStorage.setItem(SETUP_KEY, JSON.stringify({ players: s.players, deals: s.deals, seats: st.seats, pace: Number($('pace').value) }));
}

function loadSetup() {
  let s = {};
  try {
    s = JSON.parse(localStorage.getItem(SETUP_KEY) || '{}') || {};
  } catch {
    s = {};
  }
  const players = [3, 4, 5, 6].includes(s.players) ? s.players : 4;
  $('players').value = String(players);
  fillDeals(players, s.deals);
  if (Array.isArray(s.seats) && s.seats.length === MAX_SEATS && s.seats.every((c) => typeof c === 'string' && c)) {
    st.seats = s.seats.slice();
  } else if (Array.isArray(s.humans)) { // the setup of an older page: people's seats and one bot
    const bot = typeof s.bot === 'string' && s.bot ? s.bot : 'heuristic';
    st.seats = Array.from({ length: MAX_SEATS }, (_, x) => (s.humans.includes(x) ? YOU : bot));
  }
  if (Number.isInteger(s.pace) && s.pace >= 0 && s.pace <= 2000) $('pace').value = String(s.pace);
}

function fillDeals(players, want) {
  const sel = $('deals');
  sel.replaceChildren();
  for (let d = 1; d <= 12; d++) sel.append(el('option', { value: String(d), text: d === players ? `${d} (one each)` : String(d) }));
  sel.value = String(Number.isInteger(want) && want >= 1 && want <= 12 ? want : players);
}

// botsFor lists the server's bots of the card game, the described ones
// first; a policy's bot is offered (not disabled) only for a table of its
// policy's player count.
function botsFor(players) {
  const rank = (b) => { const i = BUILTIN_BOTS.findIndex((x) => x.bot === b); return i < 0 ? BUILTIN_BOTS.length : i; };
  const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  const names = [...st.bots].sort((a, b) => rank(a) - rank(b) || byName(a, b));
  return names.map((b) => {
    const builtin = BUILTIN_BOTS.find((x) => x.bot === b);
    const m = /(?:^|:)policy:(.+)$/.exec(b);
    const pol = m && st.policies.find((p) => p.name === m[1]);
    const ok = !pol || pol.game.players === players;
    return { value: b, ok, text: builtin ? builtin.label : `${b}${ok ? '' : ` (${pol.game.players} players)`}` };
  });
}

// fillSeats draws one choice per seat: "you" or a bot. A seat whose bot
// cannot play this player count (a policy of another) falls back to
// heuristic.
function fillSeats() {
  const players = Number($('players').value);
  const bots = botsFor(players);
  const box = $('seats');
  box.querySelectorAll('label').forEach((b) => b.remove());
  for (let s = 0; s < players; s++) {
    const known = st.seats[s] === YOU || bots.some((b) => b.ok && b.value === st.seats[s]);
    // Until GET /v1/policies has answered, a saved policy is kept as it is.
    if (!known && st.connected) st.seats[s] = 'heuristic';
    const sel = el('select', { 'data-seat': String(s), 'aria-label': `Seat ${s}` },
      el('option', { value: YOU, text: 'you' }),
      bots.map((b) => el('option', { value: b.value, disabled: !b.ok, text: b.text })),
      !known && !st.connected ? el('option', { value: st.seats[s], text: st.seats[s] }) : null);
    sel.value = st.seats[s];
    sel.addEventListener('change', () => {
      st.seats[s] = sel.value;
      fillSeats();
      saveSetup();
    });
    box.append(el('label', { class: `seat-choice${st.seats[s] === YOU ? ' human' : ''}`, 'data-seat': String(s) }, `Seat ${s} `, sel));
  }
  const n = readSetup().humans.length;
  $('setup-note').textContent = n === 0
    ? 'Choose at least one seat to play.'
    : n > 1 ? `${n} people take turns at this screen; each sees their hand when it is their turn.` : '';
  $('new-game').disabled = n === 0;
  summarise();
}

// setAllBots seats one bot at every seat that is not a person's.
function setAllBots(bot) {
  for (let s = 0; s < MAX_SEATS; s++) if (st.seats[s] !== YOU) st.seats[s] = bot;
  fillSeats();
  saveSetup();
}

function fillAllBots() {
  const sel = $('bot');
  sel.replaceChildren(el('option', { value: '', text: 'choose…' }),
    ...botsFor(Number($('players').value)).map((b) => el('option', { value: b.value, disabled: !b.ok, text: b.text })));
  sel.value = '';
}

function summarise() {
  if ($('game-choice').value === DUEL) {
    const role = Number($('duel-role').value);
    $('setup-summary').textContent = `the duel · you: ${role ? 'David' : 'Goliath'} · against ${$('duel-bot').value} (open to change, then New game)`;
    $('new-game').disabled = false;
    return;
  }
  const s = readSetup();
  const you = s.humans.length === 1 ? `you: seat ${s.humans[0]}` : `people: seats ${s.humans.join(', ')}`;
  const bots = s.seats.map((c, x) => (c === YOU ? null : `seat ${x} ${c}`)).filter(Boolean);
  $('setup-summary').textContent = `${s.players} players · ${s.deals} deal${s.deals === 1 ? '' : 's'} · ${you}${bots.length ? ` · bots: ${bots.join(', ')}` : ''} (open to change, then New game)`;
}

// seatNames labels each seat: "You" (or "Seat s (you)" with several
// people), else "Seat s (its bot)" from the session's spec.opponents.
function seatNames(setup, opponents) {
  const names = [];
  for (let s = 0; s < setup.players; s++) {
    if (setup.humans.includes(s)) names.push(setup.humans.length === 1 ? 'You' : `Seat ${s} (you)`);
    else names.push(`Seat ${s} (${String(opponents[s]).replace(/^policy:/, '')})`);
  }
  return names;
}

function paceMs() {
  return Number($('pace').value);
}

function decodeBatch(b) {
  return {
    mask: tensor(b.mask),
    player: tensor(b.player)[0],
    done: tensor(b.done)[0],
    scores: tensor(b.scores),
    episode: tensor(b.episode)[0],
  };
}

const sessionPath = (rest = '') => `/v1/sessions/${st.session.id}${rest}`;

async function newGame() {
  const setup = readSetup();
  if (!setup.humans.length) return;
  const gen = ++st.gen;
  st.skip = false;
  $('skip').hidden = true;
  st.mismatch = null;
  showError('');
  setState('loading');
  $('new-game').disabled = true;
  $('again').disabled = true;
  try {
    let batch;
    if (st.session && sameSetup(st.session.setup, setup)) {
      batch = await api.post(sessionPath('/reset'), {});
    } else {
      if (st.session) {
        const old = sessionPath();
        st.session = null;
        await api.del(old).catch(() => {}); // gone already (expired) is fine
      }
      const body = { game: { players: setup.players, deals: setup.deals }, num_envs: 1, learner_seats: setup.humans, reward: 'points' };
      if (setup.humans.length < setup.players) body.opponents = setup.seats.map((c) => (c === YOU ? null : c));
      const ans = await api.post('/v1/sessions', body);
      st.session = { id: ans.session, setup, opponents: ans.spec.opponents };
      batch = await api.post(sessionPath('/reset'), {});
    }
    if (gen !== st.gen) return;
    st.names = seatNames(setup, st.session.opponents);
    st.batch = decodeBatch(batch);
    st.game = null;
    st.pos = { deal: 0, n: 0 };
    $('play-area').hidden = false;
    $('game-over').hidden = true;
    $('setup-box').open = false;
    if (document.activeElement && document.activeElement.closest('#setup-box')) document.activeElement.blur();
    $('play-session').textContent = `Session ${st.session.id} (env 0). Open it in Watch to replay a finished game.`;
    document.body.dataset.session = st.session.id;
    await follow(gen);
  } catch (e) {
    failed(e, gen);
  } finally {
    if (gen === st.gen) {
      $('new-game').disabled = readSetup().humans.length === 0;
      $('again').disabled = false;
    }
  }
}

function failed(e, gen) {
  if (gen !== st.gen) return;
  if (e instanceof ApiError && e.status === 401) {
    askToken();
    return;
  }
  if (e instanceof ApiError && e.status === 404 && st.session) {
    st.session = null; // expired while the page was idle: the next New game makes another
    showError('This game\'s session has expired on the server (sessions idle for a while are deleted). Press New game.');
  } else {
    showError(errorText(e));
  }
  setState('error');
}

// follow reads the session's record and moves the table to its end, one
// play at a time at the chosen pace.
async function follow(gen) {
  const rec = await api.get(sessionPath('/envs/0/record'));
  if (gen !== st.gen) return;
  // A step that ends the game already starts the next one (auto-reset): the
  // game we were following is then the finished one.
  st.game = st.batch.done ? rec.finished : rec.current;
  await animate(gen);
}

async function animate(gen) {
  const game = st.game;
  const target = lastPosition(game);
  setState('animating');
  renderPlay();
  $('skip').hidden = false;
  const P = game.game.players;
  while (beforePosition(st.pos, target)) {
    const next = nextPosition(game, st.pos);
    let wait = paceMs();
    const deal = game.deals[st.pos.deal];
    if (next.deal !== st.pos.deal) {
      wait *= 3; // the end of a deal stays up a little longer
    } else {
      const [seat] = deal.plays[next.n - 1];
      if (st.session.setup.humans.includes(seat)) wait = 0; // a card just clicked
      else if (st.pos.n > 0 && st.pos.n % P === 0) wait = Math.round(wait * 1.5); // read the last trick first
    }
    if (wait > 0 && !st.skip) await sleep(wait);
    if (gen !== st.gen) return;
    st.pos = next;
    renderPlay();
  }
  $('skip').hidden = true;
  st.skip = false;
  if (gen !== st.gen) return;
  for (let d = 0; d < game.deals.length; d++) {
    const m = checkDeal(P, game.deals[d], d);
    if (m) st.mismatch = m;
  }
  if (st.mismatch) showError(`The page and the server disagree: ${st.mismatch}`);
  if (st.batch.done) gameOver();
  else yourTurn();
}

function renderPlay() {
  const setup = st.session.setup;
  const game = st.game;
  const v = renderTable({ trick: 'play-trick', seats: 'play-seats', scores: 'play-scores', log: 'play-log' },
    game, st.pos, st.names, { faceUp: () => false, mine: (s) => setup.humans.includes(s) });
  const D = game.game.deals;
  const dealer = st.names[v.dealer];
  let text = `Deal ${st.pos.deal + 1} of ${D} · ${dealer === 'You' ? 'you deal' : `${dealer} deals`}`;
  if (!v.over) text += ` · trick ${Math.min(v.tricks.length + 1, 15)} of ${v.total / game.game.players}`;
  const state = document.body.dataset.state;
  if (v.over) text += ' · deal over';
  else if (state === 'your-turn') {
    const who = setup.humans.length === 1 ? 'Your turn' : `${st.names[v.toAct]}: your turn`;
    text += v.current.length ? ` · ${who}: follow ${COLOURS[colourOf(v.current[0][1])].name} if you can` : ` · ${who}: you lead`;
  } else if (state === 'animating' && v.toAct >= 0) text += ` · ${st.names[v.toAct]} to play`;
  $('status').textContent = text;
  renderHand(v);
  return v;
}

// renderHand shows the hand of the human seat to act (or, while the bots
// play, of the first human seat), legal cards as buttons.
function renderHand(v) {
  const setup = st.session.setup;
  const mine = document.body.dataset.state === 'your-turn';
  const seat = mine ? st.batch.player : (setup.humans.includes(v.toAct) ? v.toAct : setup.humans[0]);
  const hideOthers = setup.humans.length > 1 && !mine; // take turns at one screen: no peeking
  const hand = $('hand');
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.card : null;
  hand.replaceChildren();
  $('hand-title').textContent = setup.humans.length === 1 ? 'Your hand' : hideOthers ? 'Hands are hidden while the bots play' : `${st.names[seat]}: your hand`;
  if (hideOthers) return;
  for (const c of v.hands[seat]) {
    const legal = mine && st.batch.mask[c] === 1;
    hand.append(cardEl(c, { button: true, disabled: !legal, extra: mine && !legal ? 'illegal' : '' }));
  }
  if (mine) {
    const again = focused && hand.querySelector(`button[data-card="${focused}"]:not([disabled])`);
    const first = again || hand.querySelector('button:not([disabled])');
    if (first && document.activeElement !== first && $('play').hidden === false && !document.activeElement.closest('#setup-box')) first.focus({ preventScroll: true });
  }
}

function yourTurn() {
  const v = dealView(st.game.game.players, st.game.deals[st.pos.deal], st.pos.n);
  if (v.toAct !== st.batch.player) {
    showError(`The page and the server disagree on who plays: the record says seat ${v.toAct}, the batch says seat ${st.batch.player}.`);
  }
  setState('your-turn');
  renderPlay();
}

async function playCard(card) {
  if (document.body.dataset.state !== 'your-turn' || st.batch.mask[card] !== 1) return;
  const gen = st.gen;
  setState('sending');
  renderPlay();
  try {
    const batch = await api.post(sessionPath('/step'), { actions: [card] });
    if (gen !== st.gen) return;
    st.batch = decodeBatch(batch);
    await follow(gen);
  } catch (e) {
    if (e instanceof ApiError && e.status === 422) {
      showError(errorText(e));
      yourTurn();
      return;
    }
    failed(e, gen);
  }
}

function gameOver() {
  setState('game-over');
  renderPlay();
  const totals = st.game.totals;
  const best = Math.max(...totals);
  const winners = totals.map((t, s) => (t === best ? st.names[s] : null)).filter(Boolean);
  $('game-over-title').textContent = winners.length === 1
    ? (winners[0] === 'You' ? 'You win!' : `${winners[0]} wins`)
    : `${winners.join(' and ')} share the win`;
  $('game-over-text').textContent = `Final totals: ${totals.map((t, s) => `${st.names[s]} ${t}`).join(', ')}.`;
  $('game-over').hidden = false;
  $('hand-area').hidden = true;
  $('again').focus({ preventScroll: true });
}

// ---------- Watch ----------

function openWatch(game, names, where) {
  closeDuelWatch();
  st.watch = { game, pos: { deal: 0, n: 0 }, names, where };
  $('watch-area').hidden = false;
  $('w-slider').max = String(positionCount(game) - 1);
  renderWatch();
  $('w-next').focus({ preventScroll: true });
}

function renderWatch() {
  const w = st.watch;
  const P = w.game.game.players;
  const v = renderTable({ trick: 'watch-trick', seats: 'watch-seats', scores: 'watch-scores', log: 'watch-log' },
    w.game, w.pos, w.names, { faceUp: () => true });
  const idx = positionIndex(w.game, w.pos);
  $('w-slider').value = String(idx);
  const first = idx === 0;
  const last = idx === positionCount(w.game) - 1;
  $('w-first').disabled = first;
  $('w-prev').disabled = first;
  $('w-prev-trick').disabled = first;
  $('w-next').disabled = last;
  $('w-next-trick').disabled = last;
  $('w-last').disabled = last;
  const D = w.game.deals.length;
  const inTrick = v.current.length;
  let text = `${w.where} · deal ${w.pos.deal + 1} of ${D} (${w.names[v.dealer]} deals) · `;
  if (v.over) text += 'deal over';
  else if (inTrick === 0 && v.tricks.length) text += `trick ${v.tricks.length} of ${v.total / P} taken`;
  else if (inTrick === 0) text += 'before the first card';
  else text += `trick ${v.tricks.length + 1} of ${v.total / P}, card ${inTrick} of ${P}`;
  text += ` · position ${idx + 1} of ${positionCount(w.game)}`;
  $('watch-status').textContent = text;
  $('watch').dataset.pos = `${w.pos.deal}:${w.pos.n}`;
  $('watch').dataset.last = last ? '1' : '0';
}

function watchMove(f) {
  const w = st.watch;
  if (!w) return;
  const p = f(w.game, w.pos);
  if (p) {
    w.pos = p;
    renderWatch();
  }
}

// By trick: to the next (previous) position where a trick is complete or
// the deal starts.
function nextTrick(game, pos) {
  const P = game.game.players;
  let p = nextPosition(game, pos);
  while (p && p.n % P !== 0) p = nextPosition(game, p);
  return p || lastPosition(game);
}

function prevTrick(game, pos) {
  const P = game.game.players;
  let p = prevPosition(game, pos);
  while (p && p.n % P !== 0) p = prevPosition(game, p);
  return p || { deal: 0, n: 0 };
}

async function watchSession(id, k, which) {
  showError('');
  setState('loading');
  try {
    const rec = await api.get(`/v1/sessions/${encodeURIComponent(id)}/envs/${k}/record`);
    const any = rec.finished || rec.current;
    if (any && any.game && any.game.name === DUEL) {
      const info = await api.get(`/v1/sessions/${encodeURIComponent(id)}`);
      st.watch = null;
      await watchDuelSession(id, k, which, info.spec.opponents || []);
      setState('watching');
      return;
    }
    let game = which === 'current' ? rec.current : rec.finished;
    let where = which === 'current' ? 'game in progress' : 'last finished game';
    if (!game) {
      game = rec.current;
      where = 'game in progress (no game has finished yet)';
    }
    game = asGameRecord(game);
    const info = await api.get(`/v1/sessions/${encodeURIComponent(id)}`);
    const opponents = info.spec.opponents || [];
    const bots = opponents.some((o) => o);
    const names = [];
    for (let s = 0; s < game.game.players; s++) names.push(opponents[s] ? `Seat ${s} (${opponents[s]})` : bots ? `Seat ${s} (client)` : `Seat ${s}`);
    openWatch(game, names, `Session ${id.slice(0, 8)}…, env ${k}, ${where}`);
    setState('watching');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      askToken();
      return;
    }
    showError(errorText(e));
    setState('error');
  }
}

function watchFile(file) {
  showError('');
  if (file.size > MAX_RECORD_BYTES) {
    showError(`${file.name}: ${file.size} bytes, not a dgenv game record (one is at most ${MAX_RECORD_BYTES} bytes)`);
    setState('error');
    return;
  }
  const r = new FileReader();
  r.onload = async () => {
    try {
      const text = String(r.result);
      const data = JSON.parse(text);
      const g = data && typeof data === 'object' && (data.finished || data.current || data);
      if (g && g.game && g.game.name === DUEL) {
        // The server replays and describes a duel (the rules live there).
        setState('loading');
        await watchDuelFile(text, file.name);
        st.watch = null;
        setState('watching');
        return;
      }
      const game = asGameRecord(data);
      const names = Array.from({ length: game.game.players }, (_, s) => `Seat ${s}`);
      openWatch(game, names, file.name);
      setState('watching');
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        askToken();
        return;
      }
      showError(`${file.name}: ${e instanceof ApiError ? errorText(e) : e.message}`);
      setState('error');
    }
  };
  r.onerror = () => showError(`${file.name}: cannot read the file`);
  r.readAsText(file);
}

// ---------- tabs, token, start-up ----------

function showTab(name) {
  const play = name === 'play';
  $('play').hidden = !play;
  $('watch').hidden = play;
  $('tab-play').setAttribute('aria-selected', String(play));
  $('tab-watch').setAttribute('aria-selected', String(!play));
  if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
}

function askToken() {
  setState('token');
  $('token-form').hidden = false;
  showError(api.token ? 'The server refused the token. Enter it again.' : '');
  $('token').focus();
}

async function connect() {
  try {
    const ans = await api.get('/v1/policies');
    st.policies = ans.policies || [];
    const games = await api.get('/v1/games');
    const game = (games.games || []).find((g) => g.name === GAME);
    if (game && Array.isArray(game.bots) && game.bots.length) st.bots = game.bots;
    const duel = (games.games || []).find((g) => g.name === DUEL);
    $('game-choice').querySelector(`option[value="${DUEL}"]`).disabled = !duel;
    if (duel) setDuelBots(duel.bots);
    else if ($('game-choice').value === DUEL) chooseGame(GAME);
    st.connected = true;
    $('token-form').hidden = true;
    showError('');
    fillAllBots();
    fillSeats();
    setState('ready');
    $('new-game').focus({ preventScroll: true });
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) askToken();
    else {
      showError(`Cannot talk to the server: ${errorText(e)}`);
      setState('error');
    }
  }
}

// chooseGame shows the setup of the card game or of the duel.
function chooseGame(g) {
  const duel = g === DUEL;
  $('game-choice').value = duel ? DUEL : GAME;
  $('card-setup').hidden = duel;
  $('duel-setup').hidden = !duel;
  $('card-foot').hidden = duel;
  $('duel-foot').hidden = !duel;
  localStorage.setItem(GAME_KEY, duel ? DUEL : GAME);
  if (duel) summarise();
  else fillSeats();
}

function init() {
  $('legend').textContent = COLOURS.map((c) => `${c.symbol} ${c.name}`).join(', ');
  const ps = $('players');
  for (let p = 3; p <= 6; p++) ps.append(el('option', { value: String(p), text: String(p) }));
  loadSetup();
  fillAllBots();
  fillSeats();
  initDuel({ api, el, setState, showError, errorText, askToken, showTab, paceMs });
  chooseGame(localStorage.getItem(GAME_KEY) === DUEL ? DUEL : GAME);
  $('game-choice').addEventListener('change', (e) => chooseGame(e.target.value));
  $('duel-role').addEventListener('change', summarise);
  $('duel-bot').addEventListener('change', summarise);
  const paceOut = () => { $('pace-out').textContent = `${(paceMs() / 1000).toFixed(1)} s`; };
  paceOut();
  $('pace').addEventListener('input', () => { paceOut(); saveSetup(); });
  ps.addEventListener('change', () => {
    fillDeals(Number(ps.value));
    fillAllBots();
    fillSeats();
    saveSetup();
  });
  $('deals').addEventListener('change', () => { saveSetup(); summarise(); });
  $('bot').addEventListener('change', (e) => { if (e.target.value) setAllBots(e.target.value); fillAllBots(); });
  $('setup').addEventListener('submit', (e) => {
    e.preventDefault();
    if ($('game-choice').value === DUEL) {
      st.gen++; // stops a card game's animation
      $('play-area').hidden = true;
      newDuel();
      return;
    }
    $('duel-area').hidden = true;
    $('hand-area').hidden = false;
    newGame();
  });
  $('again').addEventListener('click', () => {
    $('hand-area').hidden = false;
    newGame();
  });
  $('skip').addEventListener('click', () => { st.skip = true; });
  $('hand').addEventListener('click', (e) => {
    const b = e.target.closest('button.card');
    if (b && !b.disabled) playCard(Number(b.dataset.card));
  });
  $('hand').addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const cards = [...$('hand').querySelectorAll('button:not([disabled])')];
    const i = cards.indexOf(document.activeElement);
    if (!cards.length) return;
    const j = i < 0 ? 0 : (i + (e.key === 'ArrowRight' ? 1 : cards.length - 1)) % cards.length;
    cards[j].focus();
    e.preventDefault();
  });
  $('watch-this').addEventListener('click', () => {
    showTab('watch');
    $('watch-id').value = st.session.id;
    $('watch-env').value = '0';
    $('watch-which').value = 'finished';
    openWatch(st.game, st.names, 'Your last game');
    setState('watching');
  });
  $('tab-play').addEventListener('click', () => showTab('play'));
  $('tab-watch').addEventListener('click', () => showTab('watch'));
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    api.setToken($('token').value.trim());
    connect();
  });
  $('watch-session').addEventListener('submit', (e) => {
    e.preventDefault();
    watchSession($('watch-id').value.trim(), Number($('watch-env').value) || 0, $('watch-which').value);
  });
  $('watch-file').addEventListener('change', (e) => {
    const f = e.target.files[0];
    if (f) watchFile(f);
  });
  // The controls move a duel's replay when one is open (duel.js).
  const move = (duelHow, f) => () => (duelWatching() ? duelWatchMove(duelHow) : watchMove(f));
  $('w-first').addEventListener('click', move('first', () => ({ deal: 0, n: 0 })));
  $('w-last').addEventListener('click', move('last', (g) => lastPosition(g)));
  $('w-prev').addEventListener('click', move('prev', prevPosition));
  $('w-next').addEventListener('click', move('next', nextPosition));
  $('w-prev-trick').addEventListener('click', move('prev-round', prevTrick));
  $('w-next-trick').addEventListener('click', move('next-round', nextTrick));
  $('w-slider').addEventListener('input', (e) => {
    if (duelWatching()) duelWatchMove(Number(e.target.value));
    else watchMove((g) => positionAt(g, Number(e.target.value)));
  });
  document.addEventListener('keydown', (e) => {
    if (!$('watch').hidden && duelWatching() && !e.target.closest('input, select, textarea')) {
      const keys = {
        ArrowRight: 'next', ArrowLeft: 'prev', ArrowDown: 'next-round', PageDown: 'next-round',
        ArrowUp: 'prev-round', PageUp: 'prev-round', Home: 'first', End: 'last',
      };
      if (keys[e.key]) {
        duelWatchMove(keys[e.key]);
        e.preventDefault();
      }
      return;
    }
    if ($('watch').hidden || !st.watch || e.target.closest('input, select, textarea')) return;
    const keys = {
      ArrowRight: nextPosition, ArrowLeft: prevPosition, ArrowDown: nextTrick, PageDown: nextTrick,
      ArrowUp: prevTrick, PageUp: prevTrick, Home: () => ({ deal: 0, n: 0 }), End: lastPosition,
    };
    if (keys[e.key]) {
      watchMove(keys[e.key]);
      e.preventDefault();
    }
  });
  window.addEventListener('pagehide', () => {
    if (st.session && api.inFlight === 0) api.forget(sessionPath());
  });
  showTab(location.hash === '#watch' ? 'watch' : 'play');
  connect();
}

init();
