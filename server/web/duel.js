// The duel in the browser: play David or Goliath against a bot, and watch a
// finished duel step by step. The page draws only what the server describes
// (GET /v1/sessions/{id}/envs/{k}/positions: env/duel/view.go): the board,
// the hands, the wounds, the legal choices and the words for every action.
// It knows no rule of the duel; the batch's mask and player are checked
// against the described position at every decision.

import { ApiError } from './api.js';
import { tensor } from './game.js';

export const DUEL = 'duel';
const SEATS = ['Goliath', 'David'];
const FILES = 'abcdefgh';
export const squareName = (sq) => `${FILES[sq % 8]}${Math.floor(sq / 8) + 1}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let ui = null; // what app.js lends: api, el, $, setState, showError, errorText, askToken, showTab, paceMs
const du = {
  bots: ['heuristic', 'random'], // GET /v1/games: the duel's bots
  session: null, // { id, role, bot }
  batch: null,
  positions: [], // every position of the game shown so far (index = actions played)
  steps: [], // steps[i]: the action played in positions[i]
  shown: 0, // the position on the board
  selected: [], // card kinds picked for the next action
  gen: 0,
  watch: null, // { positions, steps, pos, names, where }
};

// ---------- drawing ----------

const el = (...a) => ui.el(...a);
const $ = (id) => document.getElementById(id);

function seatLabel(seat, names) {
  return names ? names[seat] : SEATS[seat];
}

// drawBoard draws an 8x8 board (rank 8 at the top) of position p. marks:
// square -> class list and, for a playable square, the action.
function drawBoard(box, p, marks = new Map()) {
  box.replaceChildren();
  const rocks = new Set(p.rocks);
  const trees = new Set(p.trees);
  const path = new Set(p.path);
  const stones = new Map();
  for (const sq of p.stones) stones.set(sq, (stones.get(sq) || 0) + 1);
  for (let y = 7; y >= 0; y--) {
    box.append(el('span', { class: 'rank', text: String(y + 1), 'aria-hidden': 'true' }));
    for (let x = 0; x < 8; x++) {
      const sq = y * 8 + x;
      const m = marks.get(sq);
      const parts = [];
      const words = [squareName(sq)];
      if (rocks.has(sq)) { parts.push(el('span', { class: 'obst rock', text: '▲' })); words.push('rock'); }
      if (trees.has(sq)) { parts.push(el('span', { class: 'obst tree', text: '♣' })); words.push('tree'); }
      p.figures.forEach((f, seat) => {
        if (f === sq) {
          parts.push(el('span', { class: `fig f${seat}`, text: SEATS[seat][0] }));
          words.push(SEATS[seat]);
        }
      });
      if (p.spear === sq) { parts.push(el('span', { class: 'token spear', text: 'spear' })); words.push('the spear'); }
      if (stones.has(sq)) {
        parts.push(el('span', { class: 'token stone', text: `● ${stones.get(sq)}` }));
        words.push(`${stones.get(sq)} stone${stones.get(sq) === 1 ? '' : 's'}`);
      }
      const cls = ['sq', (x + y) % 2 ? 'light' : 'dark'];
      if (path.has(sq)) cls.push('path');
      if (m) cls.push(...m.cls);
      const attrs = { class: cls.join(' '), 'data-sq': String(sq), 'aria-label': words.join(', ') };
      if (m && m.action !== undefined) {
        attrs['data-action'] = String(m.action);
        attrs.title = m.text;
        box.append(el('button', { type: 'button', ...attrs }, parts));
      } else {
        box.append(el('div', { role: 'gridcell', ...attrs }, parts));
      }
    }
  }
  box.append(el('span', { class: 'rank' }));
  for (let x = 0; x < 8; x++) box.append(el('span', { class: 'file', text: FILES[x], 'aria-hidden': 'true' }));
}

// cardEl draws a duel card: its name, its use as a tooltip.
function cardEl(c, opts = {}) {
  const attrs = { class: `dcard g-${group(c.kind)}${opts.extra ? ` ${opts.extra}` : ''}`, 'data-kind': String(c.kind), title: c.use };
  if (opts.button) {
    attrs.type = 'button';
    attrs.disabled = !!opts.disabled;
    attrs['aria-pressed'] = opts.pressed ? 'true' : 'false';
    return el('button', attrs, c.name);
  }
  return el('span', attrs, c.name);
}

// The card families, for their colour only (the name is always written).
function group(kind) {
  if (kind <= 6) return 'move';
  if (kind === 7) return 'negate';
  if (kind <= 16) return 'goliath';
  if (kind <= 23) return 'david';
  if (kind <= 26) return 'defence';
  return 'event';
}

// drawSeats: each seat's wounds, hand size and limit, tokens; the hand
// face up where faceUp(seat).
function drawSeats(box, p, names, faceUp) {
  box.replaceChildren();
  for (const s of p.seats) {
    const badges = [];
    if (p.to_act === s.seat) badges.push(el('span', { class: 'badge turn', text: `to ${p.phase}` }));
    if (p.over && p.winner === s.seat) badges.push(el('span', { class: 'badge leader', text: 'winner' }));
    const wounds = el('span', { class: 'wounds', 'data-wounds': String(s.wounds), title: `${s.wounds} of 3 wounds` },
      [0, 1, 2].map((i) => el('span', { class: i < s.wounds ? 'wound on' : 'wound', text: i < s.wounds ? '✖' : '○' })));
    const tokens = s.seat === 0
      ? (s.spear_held ? 'holds the spear' : 'the spear is on the board')
      : `${s.stones_held} stone${s.stones_held === 1 ? '' : 's'} in hand`;
    box.append(el('div', { class: `panel dseat${p.to_act === s.seat ? ' acting' : ''}`, 'data-seat': String(s.seat) },
      el('div', { class: 'seat-head' }, el('strong', { text: seatLabel(s.seat, names) }), ...badges),
      el('p', {}, 'Wounds ', wounds, ` · ${tokens}`),
      el('p', { class: 'count', 'data-hand-size': String(s.hand_size) }, `${s.hand_size} card${s.hand_size === 1 ? '' : 's'} in hand (limit ${s.hand_limit})`),
      faceUp(s.seat) ? el('div', { class: 'mini-hand' }, s.hand.map((c) => cardEl(c))) : null));
  }
  box.append(el('p', { class: 'note' }, `Deck ${p.deck} · discard pile ${p.discards}`));
}

// drawLog lists the actions up to position upTo, newest first, each round
// under its number.
function drawLog(ol, positions, steps, upTo, names) {
  ol.replaceChildren();
  for (let i = 0; i < upTo; i++) {
    const s = steps[i];
    if (i === 0 || positions[i].round !== positions[i - 1].round) {
      ol.prepend(el('li', { class: 'round-head', text: `Round ${positions[i].round}` }));
    }
    ol.prepend(el('li', { value: String(i + 1), 'data-step': String(i), class: `s${s.seat}` }, rename(s.text, names)));
  }
  if (!upTo) ol.append(el('li', { class: 'empty', text: 'Nothing yet.' }));
}

// rename writes "Goliath (you)" or "David (heuristic)" for the first
// mention of a seat in the server's words.
function rename(text, names) {
  if (!names) return text;
  return text.replace(/^(Goliath|David)\b/, (m) => names[SEATS.indexOf(m)]);
}

function statusText(p, names) {
  const round = `Round ${p.round} of ${p.max_rounds}`;
  if (p.over) return `${round} · game over · ${rename(p.prompt, names)}`;
  return `${round} · ${seatLabel(p.to_act, names)}: ${p.phase}${p.pending ? ` · ${p.pending}` : ''}`;
}

// ---------- Play ----------

function names() {
  const r = du.session.role;
  return SEATS.map((n, s) => (s === r ? `${n} (you)` : `${n} (${String(du.session.bot).replace(/^policy:/, '')})`));
}

const sessionPath = (rest = '') => `/v1/sessions/${du.session.id}${rest}`;

function decodeBatch(b) {
  return { mask: tensor(b.mask), player: tensor(b.player)[0], done: tensor(b.done)[0], scores: tensor(b.scores) };
}

export function duelSetup() {
  return { role: Number($('duel-role').value), bot: $('duel-bot').value };
}

export async function newDuel() {
  const setup = duelSetup();
  const gen = ++du.gen;
  ui.showError('');
  ui.setState('loading');
  $('new-game').disabled = true;
  $('duel-again').disabled = true;
  try {
    let batch;
    if (du.session && du.session.role === setup.role && du.session.bot === setup.bot) {
      batch = await ui.api.post(sessionPath('/reset'), {});
    } else {
      if (du.session) {
        const old = sessionPath();
        du.session = null;
        await ui.api.del(old).catch(() => {});
      }
      const ans = await ui.api.post('/v1/sessions', {
        game: { name: DUEL }, num_envs: 1, learner_seats: [setup.role], opponent: setup.bot, reward: 'points',
      });
      du.session = { id: ans.session, ...setup };
      batch = await ui.api.post(sessionPath('/reset'), {});
    }
    if (gen !== du.gen) return;
    du.batch = decodeBatch(batch);
    du.positions = [];
    du.steps = [];
    du.shown = 0;
    du.selected = [];
    $('duel-area').hidden = false;
    $('duel-game-over').hidden = true;
    $('duel-hand-area').hidden = false;
    $('setup-box').open = false;
    $('duel-session').textContent = `Session ${du.session.id} (env 0). Open it in Watch to replay a finished duel.`;
    document.body.dataset.session = du.session.id;
    await follow(gen);
  } catch (e) {
    failed(e, gen);
  } finally {
    if (gen === du.gen) {
      $('new-game').disabled = false;
      $('duel-again').disabled = false;
    }
  }
}

function failed(e, gen) {
  if (gen !== du.gen) return;
  if (e instanceof ApiError && e.status === 401) {
    ui.askToken();
    return;
  }
  if (e instanceof ApiError && e.status === 404 && du.session) {
    du.session = null;
    ui.showError('This duel\'s session has expired on the server (sessions idle for a while are deleted). Press New game.');
  } else {
    ui.showError(ui.errorText(e));
  }
  ui.setState('error');
}

// follow reads the positions the last step made (the bot's plays, then the
// seat to act) and shows them one at a time at the chosen pace.
async function follow(gen) {
  const which = du.batch.done ? 'finished' : 'current';
  const ans = await ui.api.get(sessionPath(`/envs/0/positions?game=${which}&from=${du.positions.length ? du.positions.length - 1 : 0}`));
  if (gen !== du.gen) return;
  du.positions.splice(ans.from, du.positions.length - ans.from, ...ans.positions);
  du.steps.splice(ans.from, du.steps.length - ans.from, ...ans.steps);
  ui.setState('animating');
  while (du.shown < du.positions.length - 1) {
    const s = du.steps[du.shown];
    const wait = s.seat === du.session.role ? 0 : ui.paceMs();
    if (wait > 0 && !du.skip) {
      renderPlay();
      await sleep(wait);
    }
    if (gen !== du.gen) return;
    du.shown++;
  }
  du.skip = false;
  $('skip').hidden = true;
  renderPlay();
  if (du.batch.done) {
    gameOver();
    return;
  }
  const p = du.positions[du.shown];
  const legal = p.legal.map((c) => c.action);
  const mask = [];
  du.batch.mask.forEach((m, a) => { if (m === 1) mask.push(a); });
  if (p.to_act !== du.batch.player || legal.join() !== mask.join()) {
    ui.showError(`The page and the server disagree: the position says ${SEATS[p.to_act]} may play ${legal.join(',')}, the batch says seat ${du.batch.player} may play ${mask.join(',')}.`);
  }
  ui.setState('your-turn');
  renderPlay();
}

function renderPlay() {
  const p = du.positions[du.shown];
  const n = names();
  const mine = document.body.dataset.state === 'your-turn';
  const choices = mine ? p.legal.filter((c) => du.selected.every((k) => c.cards.includes(k))) : [];
  // The squares of the choices that use the selected cards: one action each.
  const marks = new Map();
  if (mine && du.selected.length) {
    const bySquare = new Map();
    for (const c of choices) if (c.to >= 0) bySquare.set(c.to, [...(bySquare.get(c.to) || []), c]);
    for (const [sq, cs] of bySquare) {
      marks.set(sq, cs.length === 1 ? { cls: ['target'], action: cs[0].action, text: cs[0].text } : { cls: ['target-many'] });
    }
  }
  drawBoard($('duel-board'), p, marks);
  drawSeats($('duel-seats'), p, n, (s) => s === du.session.role);
  drawLog($('duel-log'), du.positions, du.steps, du.shown, n);
  let status = statusText(p, n);
  if (mine) status += ' · your turn';
  else if (document.body.dataset.state === 'animating' && !p.over) status += ` · ${SEATS[p.to_act]} (${du.session.bot}) thinks`;
  $('duel-status').textContent = status;
  // The hand: a card is enabled when some legal choice spends it together
  // with the cards already picked.
  const me = p.seats[du.session.role];
  const usable = new Set();
  if (mine) for (const c of p.legal) for (const k of c.cards) usable.add(k);
  const hand = $('duel-hand');
  hand.replaceChildren(...me.hand.map((c, i) => {
    const picked = du.selected.includes(c.kind) && me.hand.findIndex((x) => x.kind === c.kind) === i;
    return cardEl(c, { button: true, disabled: !usable.has(c.kind), pressed: picked, extra: picked ? 'picked' : '' });
  }));
  if (!me.hand.length) hand.append(el('p', { class: 'note', text: 'No cards.' }));
  $('duel-hand-title').textContent = `Your hand (${me.hand_size}, limit ${me.hand_limit})`;
  $('duel-prompt').textContent = mine ? rename(p.prompt, n) : p.over ? '' : `Wait: ${SEATS[p.to_act]} is to ${p.phase}.`;
  const box = $('duel-choices');
  box.replaceChildren(...choices.map((c) => el('button', {
    type: 'button', class: `choice g-${c.group}`, 'data-action': String(c.action), 'data-group': c.group,
  }, c.text)));
  if (mine && du.selected.length) box.append(el('button', { type: 'button', class: 'small', id: 'duel-unpick', text: 'Pick other cards' }));
}

function pickCard(kind) {
  if (document.body.dataset.state !== 'your-turn') return;
  const p = du.positions[du.shown];
  const wanted = du.selected.includes(kind) ? du.selected.filter((k) => k !== kind) : [...du.selected, kind];
  // Cards that no single choice spends together start a new pick.
  du.selected = p.legal.some((c) => wanted.every((k) => c.cards.includes(k))) ? wanted : [kind];
  renderPlay();
}

async function play(action) {
  if (document.body.dataset.state !== 'your-turn' || du.batch.mask[action] !== 1) return;
  const gen = du.gen;
  du.selected = [];
  ui.setState('sending');
  renderPlay();
  try {
    const batch = await ui.api.post(sessionPath('/step'), { actions: [action] });
    if (gen !== du.gen) return;
    du.batch = decodeBatch(batch);
    if (ui.paceMs() > 0) $('skip').hidden = false;
    await follow(gen);
  } catch (e) {
    if (e instanceof ApiError && e.status === 422) {
      ui.showError(ui.errorText(e));
      ui.setState('your-turn');
      renderPlay();
      return;
    }
    failed(e, gen);
  }
}

function gameOver() {
  ui.setState('game-over');
  renderPlay();
  const p = du.positions[du.shown];
  const r = du.session.role;
  $('duel-over-title').textContent = p.winner < 0 ? 'A draw' : p.winner === r ? 'You win!' : `${SEATS[p.winner]} (${du.session.bot}) wins`;
  $('duel-over-text').textContent = p.prompt;
  $('duel-game-over').hidden = false;
  $('duel-hand-area').hidden = true;
  $('duel-again').focus({ preventScroll: true });
}

// ---------- Watch ----------

// openDuelWatch shows a described duel (the positions answer of a finished
// or running game) in the watch view, every hand face up.
export function openDuelWatch(ans, names, where) {
  du.watch = { positions: ans.positions, steps: ans.steps, pos: 0, names, where };
  $('watch-area').hidden = false;
  $('watch-cards').hidden = true;
  $('watch-duel').hidden = false;
  $('w-prev-trick').textContent = '« Round';
  $('w-next-trick').textContent = 'Round »';
  $('w-prev').textContent = '‹ Step';
  $('w-next').textContent = 'Step ›';
  $('w-slider').max = String(ans.positions.length - 1);
  $('watch-keys').textContent = 'Keys: ← → one step, ↑ ↓ one round, Home and End.';
  $('card-foot').hidden = true;
  $('duel-foot').hidden = false;
  renderWatch();
  $('w-next').focus({ preventScroll: true });
}

export function closeDuelWatch() {
  du.watch = null;
  $('watch-cards').hidden = false;
  $('watch-duel').hidden = true;
  $('w-prev-trick').textContent = '« Trick';
  $('w-next-trick').textContent = 'Trick »';
  $('w-prev').textContent = '‹ Card';
  $('w-next').textContent = 'Card ›';
  $('watch-keys').textContent = 'Keys: ← → one card, ↑ ↓ one trick, Home and End.';
  const duel = $('game-choice').value === DUEL;
  $('card-foot').hidden = duel;
  $('duel-foot').hidden = !duel;
}

export const duelWatching = () => du.watch !== null;

// duelWatchMove moves the replay: "first", "last", "prev", "next", "prev-round", "next-round" or a position index.
export function duelWatchMove(how) {
  const w = du.watch;
  if (!w) return;
  const last = w.positions.length - 1;
  const roundOf = (i) => w.positions[i].round;
  let i = w.pos;
  if (typeof how === 'number') i = how;
  else if (how === 'first') i = 0;
  else if (how === 'last') i = last;
  else if (how === 'prev') i = Math.max(0, i - 1);
  else if (how === 'next') i = Math.min(last, i + 1);
  else if (how === 'next-round') {
    const r = roundOf(i);
    while (i < last && roundOf(i) === r) i++;
  } else if (how === 'prev-round') {
    // To the first position of this round, or of the one before when already there.
    if (i > 0 && roundOf(i - 1) !== roundOf(i)) i--;
    const r = roundOf(i);
    while (i > 0 && roundOf(i - 1) === r) i--;
  }
  w.pos = Math.max(0, Math.min(last, i));
  renderWatch();
}

function renderWatch() {
  const w = du.watch;
  const p = w.positions[w.pos];
  const last = w.positions.length - 1;
  drawBoard($('watch-duel-board'), p);
  drawSeats($('watch-duel-seats'), p, w.names, () => true);
  drawLog($('watch-duel-log'), w.positions, w.steps, w.pos, w.names);
  $('watch-duel-step').textContent = w.pos > 0 ? `Last: ${rename(w.steps[w.pos - 1].text, w.names)}` : 'The start: both hands dealt.';
  $('w-slider').value = String(w.pos);
  for (const id of ['w-first', 'w-prev', 'w-prev-trick']) $(id).disabled = w.pos === 0;
  for (const id of ['w-next', 'w-next-trick', 'w-last']) $(id).disabled = w.pos === last;
  $('watch-status').textContent = `${w.where} · ${statusText(p, w.names)} · position ${w.pos + 1} of ${last + 1}`;
  $('watch').dataset.pos = String(w.pos);
  $('watch').dataset.last = w.pos === last ? '1' : '0';
}

// watchDuelSession opens env k of a duel session: its finished game (or the
// one in progress), with the seats named from the session's opponents.
export async function watchDuelSession(id, k, which, opponents) {
  let ans;
  let where = which === 'current' ? 'duel in progress' : 'last finished duel';
  try {
    ans = await ui.api.get(`/v1/sessions/${encodeURIComponent(id)}/envs/${k}/positions?game=${which}`);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404 && which === 'finished')) throw e;
    ans = await ui.api.get(`/v1/sessions/${encodeURIComponent(id)}/envs/${k}/positions?game=current`);
    where = 'duel in progress (no duel has finished yet)';
  }
  const n = SEATS.map((s, i) => (opponents[i] ? `${s} (${opponents[i]})` : `${s} (client)`));
  openDuelWatch(ans, n, `Session ${id.slice(0, 8)}…, env ${k}, ${where}`);
}

// watchDuelFile opens a saved duel record (the record route's answer or one
// record of it, as text): the server replays and describes it (POST
// /v1/positions), refusing one that does not replay, with the reason.
export async function watchDuelFile(text, name) {
  const ans = await ui.api.postText('/v1/positions', text);
  const where = ans.which === 'finished' ? 'finished duel' : 'duel in progress';
  openDuelWatch(ans, SEATS, `${name}, ${where}`);
}

// ---------- start-up ----------

export function setDuelBots(bots) {
  if (Array.isArray(bots) && bots.length) du.bots = bots;
  const sel = $('duel-bot');
  const want = sel.value || localStorage.getItem('dgenv-duel-bot') || 'heuristic';
  const rank = (b) => { const i = ['heuristic', 'search', 'random'].indexOf(b); return i < 0 ? 3 : i; };
  const list = [...du.bots].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  sel.replaceChildren(...list.map((b) => el('option', { value: b, text: b })));
  sel.value = list.includes(want) ? want : list[0];
}

export function initDuel(lent) {
  ui = lent;
  setDuelBots(du.bots);
  const role = localStorage.getItem('dgenv-duel-role');
  if (role === '0' || role === '1') $('duel-role').value = role;
  $('duel-role').addEventListener('change', () => localStorage.setItem('dgenv-duel-role', $('duel-role').value));
  $('duel-bot').addEventListener('change', () => localStorage.setItem('dgenv-duel-bot', $('duel-bot').value));
  $('duel-hand').addEventListener('click', (e) => {
    const b = e.target.closest('button.dcard');
    if (b && !b.disabled) pickCard(Number(b.dataset.kind));
  });
  $('duel-board').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-action]');
    if (b) play(Number(b.dataset.action));
  });
  $('duel-choices').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    if (b.id === 'duel-unpick') {
      du.selected = [];
      renderPlay();
    } else if (b.dataset.action) play(Number(b.dataset.action));
  });
  $('duel-again').addEventListener('click', () => newDuel());
  $('duel-watch-this').addEventListener('click', () => {
    ui.showTab('watch');
    $('watch-id').value = du.session.id;
    $('watch-env').value = '0';
    $('watch-which').value = 'finished';
    openDuelWatch({ positions: du.positions, steps: du.steps }, names(), 'Your last duel');
    ui.setState('watching');
  });
  $('skip').addEventListener('click', () => { du.skip = true; });
  window.addEventListener('pagehide', () => {
    if (du.session && ui.api.inFlight === 0) ui.api.forget(sessionPath());
  });
}
