"""The env API over HTTP: :class:`Client` (sessions), :class:`HttpBatchEnv` (reset/step), :class:`Batch`.

One :class:`HttpBatchEnv` owns one session and one keep-alive HTTP/1.1 connection.
Bodies are msgpack; every tensor comes back as one blob that becomes a numpy
array with ``np.frombuffer`` (no per-element work in Python).

Retries are safe: every step and reset carries the ``seq`` of the last batch
the env holds, so a request re-sent after a lost answer gets the batch the
server already produced instead of stepping again; a create carries a fresh
``request_id`` so a re-sent create answers the same session. When the
server has restarted (the session is gone), an env re-creates its session
with the same settings and marks the games that were in flight truncated
(``recover``; docs/python.md, "Retries and restarts").

The pieces live apart: the wire's descriptions of games and sessions in
:mod:`dgenv.spec`, the tensor codec in :mod:`dgenv._wire`, the HTTP exchange
and its retries in :mod:`dgenv._transport`. This module re-exports the names
it always had (``dgenv.client.Spec``, ``dgenv.client.Batch``...). The
interface itself (:class:`~dgenv.base.EnvClient`, :class:`~dgenv.base.BatchEnv`)
is :mod:`dgenv.base`'s; :mod:`dgenv.inproc` implements it over the engine in
this process.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from numpy.typing import DTypeLike

from . import _wire
from ._transport import Retry as _Retry
from ._transport import http_transport as _http
from .base import (
    ActionsLike,
    Batch,
    BatchEnv,
    EnvClient,
    GameLike,
    act_observations,
    action_array,
    create_body,
    game_body,
    record_index,
)
from .errors import (
    BusyError,
    DgenvError,
    ServerUnavailable,
    SessionNotFound,
    Unavailable,
)
from .spec import DEFAULT_GAME, NUM_ACTIONS, GameInfo, GameParam, ObsSpec, Packed, Section, Spec

log = logging.getLogger("dgenv")

__all__ = [
    "Client", "HttpBatchEnv", "BatchEnv", "Batch", "Spec", "ObsSpec", "Packed", "Section", "GameInfo", "GameParam",
    "GameLike", "connect", "NUM_ACTIONS", "DEFAULT_GAME",
]

# Batch, BatchEnv, GameLike and the body and argument helpers are dgenv.base's,
# imported here under the names this module always had (dgenv.client.Batch...).


def _client(url: str, token: Optional[str], timeout: Optional[float], ca_file: Optional[str]) -> "Client":
    """A copy of a :class:`Client` (its pickled form)."""
    return Client(url, token, timeout, ca_file=ca_file)


class Client(EnvClient):
    """A connection to a running batch server.

    Use :func:`connect` (or :func:`dgenv.serve`) to get one. The client itself
    keeps one connection for session management; every env made with
    :meth:`make` opens its own keep-alive connection.

    Args:
        url: base URL of the server, or ``"unix:/path/to.sock"``.
        token: bearer token, if the server requires one.
        timeout: socket timeout in seconds for each request.
        retry_timeout: how long, in seconds, a create, step, reset or record
            whose connection failed (refused, reset, cut mid-answer, timed
            out) or that met a draining server (503) is retried before
            :class:`~dgenv.errors.ServerUnavailable` is raised. Retries carry
            the env's ``seq`` (or the create's ``request_id``), so none is
            applied twice. 0 turns retrying off.
        recover: default of :meth:`make`'s ``recover``: when a step or reset
            finds its session gone (the server restarted, or the session
            expired), re-create it with the same settings and go on, marking
            the games in flight truncated.
        ca_file: for an ``https://`` URL, a PEM file of the certificates to
            trust (e.g. the server's own self-signed certificate); None: the
            system's CAs (and ``$SSL_CERT_FILE``). The certificate and its
            host name are always verified.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: Optional[float] = 120.0,
        *,
        retry_timeout: float = 60.0,
        recover: bool = True,
        ca_file: Optional[str] = None,
    ) -> None:
        self.url = url.rstrip("/") if "://" in url or url.startswith("unix:") else "http://" + url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retry_timeout = float(retry_timeout)
        self.recover = bool(recover)
        self.ca_file = ca_file
        self._http = _http(self.url, token, timeout, ca_file)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy (pickle, copy.deepcopy: e.g. in Gymnasium's EnvSpec kwargs) is
        # a new client of the same server with its own connection; a copy of a
        # LocalServer does not own the process.
        return (_client, (self.url, self.token, self.timeout, self.ca_file))

    def _request(self, method: str, path: str, body: Any = None, *, session_route: bool = False) -> Any:
        with self._lock:
            return self._http.request(method, path, body, session_route=session_route)

    def healthy(self) -> bool:
        """True when GET /v1/healthz answers 2xx."""
        try:
            self._request("GET", "/v1/healthz")
            return True
        except DgenvError:
            return False

    def ready(self) -> bool:
        """True when GET /v1/readyz answers 2xx (the server accepts sessions)."""
        try:
            self._request("GET", "/v1/readyz")
            return True
        except DgenvError:
            return False

    def make(
        self,
        players: Optional[int] = None,
        num_envs: int = 1,
        seed: Optional[int] = None,
        learner_seats: Optional[Sequence[int]] = None,
        opponent: Optional[str] = None,
        reward: str = "points",
        *,
        game: GameLike = None,
        deals: Optional[int] = None,
        first_dealer: Optional[int] = None,
        obs_dtype: Optional[DTypeLike] = np.float32,
        packing: Optional[str] = None,
        opponents: Optional[Sequence[Optional[str]]] = None,
        recover: Optional[bool] = None,
    ) -> "HttpBatchEnv":
        """Create a session of ``num_envs`` games and return its batch env.

        Args:
            players: seats per table (the card game: 3..6; None: the game's default, 4).
            num_envs: games stepped at once (N).
            seed: seed of the session's games (server default if None).
            learner_seats: seats the caller plays; None means all seats (self-play).
            opponent: bot for the other seats (``"random"``, ``"heuristic"``...);
                required when ``learner_seats`` leaves seats over.
            reward: ``"points"`` or ``"zero_sum"``.
            game: the game to play: a registered name (:meth:`games` lists
                them), or ``{"name": name, **params}`` with its parameters;
                None is the card game (``"david_goliath"``). ``players``,
                ``deals`` and ``first_dealer`` are added to its parameters.
            opponents: instead of ``opponent``, a bot per seat and None on the
                seats the caller plays, e.g. ``[None, "search", "heuristic",
                "policy:x"]`` (the None seats are the learner seats when
                ``learner_seats`` is None); ``spec.raw["opponents"]`` reports it.
            deals: deals per game (server default: as many as players).
            first_dealer: seat that deals first (server default 0).
            obs_dtype: dtype observations are returned in (default float32);
                None keeps the wire dtype (uint8), which is fastest.
            packing: ``"bits"`` has the server send obs and mask bit-packed
                (about 200 bytes an env-step instead of about 1 000 at 4
                players) and this client unpack them with numpy: the batches
                are the same. A fifth of the bytes across a network, and
                5-15% faster on one machine at N = 4096 (docs/benchmarks.md).
                None (or ``"none"``) sends them as uint8.
            recover: when a step or reset finds the session gone (server
                restarted, session expired), re-create it with these settings
                and reset it: a step then returns the new games' first batch
                with ``truncated`` all True (a reset returns it as usual).
                None takes the client's ``recover`` (True by default).

        The create carries a fresh ``request_id``: when its answer is lost it
        is sent again (for up to the client's ``retry_timeout``) and answers
        the same session, never a second one.

        Raises:
            BadRequest: a parameter is out of range, or the game is unknown
                (the message names it).
            LimitError: the server holds too many sessions.
        """
        body = create_body(
            game, players, num_envs, seed, learner_seats, opponent, reward, deals, first_dealer, packing, opponents
        )
        ans = self._create(body)
        return HttpBatchEnv(
            self,
            str(ans["session"]),
            Spec.from_wire(ans["spec"]),
            obs_dtype=obs_dtype,
            create_body=body,
            seq=ans.get("seq"),
            recover=self.recover if recover is None else bool(recover),
        )

    def policies(self) -> list[dict[str, Any]]:
        """The trained policies the server loaded (``GET /v1/policies``): ``name``, ``bot``,
        ``game`` (``{"name", ...parameters}``), ``obs_size``, ``num_actions``, ``sha256``, ``description``."""
        return list(self._request("GET", "/v1/policies")["policies"])

    def act(
        self,
        policy: str,
        obs: np.ndarray,
        mask: np.ndarray,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        seed: int = 0,
        logits: bool = False,
    ) -> Union[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """A served policy's actions (``POST /v1/policies/{name}/act``) for observations
        ``[N, D]`` (the engine's small integers, any numeric dtype) and masks ``[N, A]``.

        Greedy by default, or sampled from the masked softmax at ``temperature``
        with ``seed``. Returns the ``[N]`` int32 actions, and the ``[N, A]`` float32
        logits too when ``logits`` is True. The same as :meth:`dgenv.LocalClient.act`.
        """
        o = act_observations(obs)
        m = np.ascontiguousarray(mask, dtype=np.uint8)
        body = {"obs": _wire.encode_tensor(o), "mask": _wire.encode_tensor(m), "greedy": bool(greedy),
                "temperature": float(temperature), "seed": int(seed) & (2**64 - 1), "logits": bool(logits)}
        ans = self._request("POST", f"/v1/policies/{policy}/act", body)
        acts = np.asarray(_wire.decode_tensor(ans["actions"]), dtype=np.int32).reshape(-1)
        if logits:
            lg = np.asarray(_wire.decode_tensor(ans["logits"]), dtype=np.float32).reshape(len(acts), -1)
            return acts, lg
        return acts

    def games(self) -> list[GameInfo]:
        """The games this server plays (``GET /v1/games``): names, parameters and spaces."""
        ans = self._request("GET", "/v1/games")
        return [GameInfo.from_wire(g) for g in ans["games"]]

    def _create(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """POST /v1/sessions with a fresh request_id, re-sent while the answer is lost."""
        req = dict(body, request_id=uuid.uuid4().hex)
        retry = _Retry(self.retry_timeout)
        while True:
            try:
                ans = self._request("POST", "/v1/sessions", req)
                break
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise("POST /v1/sessions", e)
        if not isinstance(ans, Mapping) or "session" not in ans or "spec" not in ans:
            raise ServerUnavailable(f"POST /v1/sessions: unexpected answer {str(ans)[:200]}")
        return ans

    def close(self) -> None:
        """Close the management connection (envs keep their own)."""
        with self._lock:
            self._http.close()


def connect(
    url: str,
    token: Optional[str] = None,
    timeout: Optional[float] = 120.0,
    *,
    retry_timeout: float = 60.0,
    recover: bool = True,
    ca_file: Optional[str] = None,
) -> Client:
    """Connect to a running server at ``url`` (e.g. ``"http://127.0.0.1:8080"``).

    Args:
        url: base URL of the server (``/v1`` routes are added), or
            ``"unix:/path/to.sock"`` for a server listening on a Unix domain
            socket (``dgserver --addr unix:/path/to.sock``).
        token: bearer token, if the server requires one.
        timeout: socket timeout in seconds for each request.
        retry_timeout: seconds a request whose connection failed is retried
            (see :class:`Client`); 0: never.
        recover: whether envs re-create a session the server lost (see :class:`Client`).
        ca_file: for an ``https://`` URL (a server with ``tls.cert_file``), a
            PEM file of the certificates to trust, e.g. a self-signed
            server certificate; None: the system's CAs (and ``$SSL_CERT_FILE``).

    Raises:
        ServerUnavailable: nothing answers at ``url``.
    """
    c = Client(url, token=token, timeout=timeout, retry_timeout=retry_timeout, recover=recover, ca_file=ca_file)
    c._request("GET", "/v1/healthz")
    return c


class HttpBatchEnv(BatchEnv):
    """N games of one server session, stepped together (:class:`~dgenv.base.BatchEnv` over HTTP).

    Made by :meth:`Client.make`. ``reset`` and ``step`` return a :class:`Batch`;
    the most recent one is kept as :attr:`last`. A step the server refuses
    (e.g. :class:`~dgenv.errors.IllegalActionError`) changes nothing, so the
    env stays usable. Not safe to share between threads (the server would
    answer :class:`~dgenv.errors.BusyError`).

    Every reset and step carries :attr:`seq`, the number of the last batch
    the env holds; a request whose answer was lost (connection cut, timeout,
    server draining) is sent again with the same seq for up to the client's
    ``retry_timeout`` and gets the batch the server already produced: no env
    is stepped twice. With ``recover`` (the default), a reset or step that
    finds the session gone re-creates it with the same settings (see
    :meth:`Client.make`).

    Attributes:
        seq: batches the session has produced (the seq of :attr:`last`); 0 before the first.
        recoveries: times the session was re-created after the server lost it.
    """

    def __init__(
        self,
        client: Client,
        session: str,
        spec: Spec,
        *,
        obs_dtype: Optional[DTypeLike] = np.float32,
        create_body: Optional[Mapping[str, Any]] = None,
        seq: Optional[int] = None,
        recover: bool = False,
    ):
        super().__init__(client, session, spec, obs_dtype)
        self._pick_rng: Optional[np.random.Generator] = None  # random_actions' draws
        self._http = _http(client.url, client.token, client.timeout, getattr(client, "ca_file", None))
        self._path = f"/v1/sessions/{session}"
        self._layout: Optional[_wire.BatchLayout] = None
        # None: the server does not number batches, so a retry is not safe.
        self.seq: Optional[int] = None if seq is None else int(seq)
        self.recoveries = 0
        self._create_body = dict(create_body) if create_body is not None else None
        self._recover = bool(recover) and create_body is not None
        self._inflight: Optional[tuple[str, dict[str, Any]]] = None  # (route, body) of a sent reset/step
        self._all_trunc = np.ones(spec.num_envs, dtype=np.bool_)
        self._all_trunc.setflags(write=False)

    # -- protocol ------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, *, raw: bool = False) -> Any:
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is in flight: call step_wait first")
        # Only idempotent requests come here (GET): a lost answer is asked for again.
        retry = _Retry(self.client.retry_timeout if method == "GET" else 0.0)
        while True:
            try:
                return self._http.request(method, self._path + path, body, session_route=True, raw=raw)
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise(f"{method} {self._path}{path}", e)

    def _tensors(self, ans: Any) -> Mapping[str, Any]:
        """The answer's tensors as arrays (and its seq as an int): a raw msgpack buffer through the learned layout."""
        if isinstance(ans, np.ndarray):
            t = self._layout.decode(ans) if self._layout is not None else None
            if t is None:  # first answer of the session (or an unexpected one): learn its layout
                try:
                    self._layout = _wire.BatchLayout.learn(ans)
                    t = self._layout.decode(ans)
                except ValueError:
                    t = None
                if t is None:
                    ans = _wire.unpack_views(ans.data)
            if t is not None:
                return t
        out: dict[str, Any] = {k: _wire.decode_tensor(v) for k, v in ans.items() if _wire.is_tensor(v)}
        if isinstance(ans.get("seq"), int):
            out["seq"] = ans["seq"]
        return out

    def _batch(self, ans: Any, truncated: Optional[np.ndarray] = None) -> Batch:
        t = self._tensors(ans)
        seq = t.get("seq")
        self.seq = seq if isinstance(seq, int) else None
        pk = self.spec.obs.packed
        if pk is not None:
            obs, mask = pk.unpack(t["obs_bits"], t["obs_extra"], t["mask_bits"], self.spec.obs.size)
        else:
            obs, mask = t["obs"], t["mask"]
            mask = mask.view(np.bool_) if mask.dtype.itemsize == 1 else mask != 0
        if self.obs_dtype is not None and obs.dtype != self.obs_dtype:
            obs = obs.astype(self.obs_dtype)
        done = t["done"]
        done = done.view(np.bool_) if done.dtype.itemsize == 1 else done != 0
        b = Batch(
            obs=obs,
            mask=mask,
            player=t["player"],
            rewards=t["rewards"],
            done=done,
            scores=t["scores"],
            episode=t["episode"],
            truncated=self._no_trunc if truncated is None else truncated,
        )
        self.last = b
        return b

    def reset(self, seed: Optional[int] = None) -> Batch:
        """Start a new game in every env.

        Args:
            seed: re-seed every env's streams from (seed, env index) and zero the
                episode counters; None continues the current streams.
        """
        self.reset_async(seed)
        return self.step_wait()

    def step(self, actions: ActionsLike) -> Batch:
        """Play ``actions[i]`` (an action id 0..num_actions-1; a card id in the card game) for the seat to act in env i.

        With learner seats and an opponent, the server then plays the opponents
        until a learner seat is to act; ``rewards`` sums over those plays. An env
        whose game ends reports ``done`` and ``scores`` and already holds the
        next game's first observation (same-step auto-reset).

        Raises:
            IllegalActionError: an action is not legal (``.env``, ``.action``,
                ``.legal`` say which); nothing changed.
            ValueError: ``actions`` does not have shape ``[N]``, or is not of an integer dtype.
        """
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: ActionsLike) -> None:
        """Send a step and return at once; :meth:`step_wait` reads its answer.

        Lets the caller work (e.g. on another env's batch) while the server steps.
        """
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is already in flight: call step_wait first")
        a = self._actions(actions)
        self._send("/step", {"actions": _wire.encode_tensor(a)})

    def reset_async(self, seed: Optional[int] = None) -> None:
        """Send a reset and return at once; :meth:`step_wait` reads its answer."""
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is already in flight: call step_wait first")
        body: dict[str, Any] = {} if seed is None else {"seed": int(seed)}
        self._send("/reset", body)
        if seed is not None:
            self._pick_rng = np.random.default_rng(int(seed))

    def _send(self, route: str, body: dict[str, Any]) -> None:
        if self.seq is not None:
            body["seq"] = self.seq
        self._inflight = (route, body)
        try:
            self._http.send("POST", self._path + route, body)
        except ServerUnavailable:
            pass  # nothing is pending: step_wait sends it again

    def step_wait(self) -> Batch:
        """The answer to the last :meth:`step_async` or :meth:`reset_async` (raises its error, if any).

        A lost answer is asked for again with the same request (same seq);
        see the class docstring.
        """
        if self._inflight is None:
            raise DgenvError("no step_async or reset_async in flight")
        route, body = self._inflight
        retry = _Retry(self.client.retry_timeout if self.seq is not None else 0.0)
        recovered = 0
        try:
            while True:
                try:
                    if self._http._pending is None:  # the last send or answer was lost
                        self._http.send("POST", self._path + route, body)
                    return self._batch(self._http.receive(session_route=True, raw=True))
                except (ServerUnavailable, Unavailable) as e:
                    retry.wait_or_raise(f"POST {self._path}{route}", e)
                except BusyError as e:
                    # Busy after a lost answer: the lost request may still be
                    # running on the server; the same seq is safe to repeat.
                    if retry.attempt == 0:
                        raise
                    retry.wait_or_raise(f"POST {self._path}{route}", e)
                except SessionNotFound:
                    if not self._recover or recovered >= 3:
                        raise
                    recovered += 1
                    return self._recovered(route, body, retry)
        finally:
            self._inflight = None

    def _recovered(self, route: str, body: Mapping[str, Any], retry: "_Retry") -> Batch:
        """The session is gone: make it again with the same settings and reset it.

        A step's actions were for games that no longer exist: they are
        dropped, and the new games' first batch comes back with every env
        marked truncated. A reset is simply done on the new session.
        """
        assert self._create_body is not None
        old = self.session
        ans = self.client._create(self._create_body)
        spec = Spec.from_wire(ans["spec"])
        if (spec.num_envs, spec.players, spec.obs.shape) != (self.spec.num_envs, self.spec.players, self.spec.obs.shape):
            raise DgenvError(f"session {old} was lost and the server made its replacement with another shape: {spec}")
        self.session = str(ans["session"])
        self._path = f"/v1/sessions/{self.session}"
        self.spec = spec
        self.seq = ans.get("seq")
        self._layout = None
        self.recoveries += 1
        log.warning("session %s was lost (server restarted or session expired); re-created as %s", old, self.session)
        reset: dict[str, Any] = {}
        if route == "/reset" and "seed" in body:
            reset["seed"] = body["seed"]
        if self.seq is not None:
            reset["seq"] = self.seq
        while True:
            try:
                self._http.send("POST", self._path + "/reset", reset)
                ans = self._http.receive(session_route=True, raw=True)
                break
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise(f"POST {self._path}/reset", e)
        return self._batch(ans, truncated=self._all_trunc if route == "/step" else None)

    def _actions(self, actions: ActionsLike) -> np.ndarray:
        a = action_array(actions, self.num_envs)
        # int16 halves the request; anything out of its range goes as is (the
        # server refuses it) rather than wrapping into a legal-looking card.
        if a.dtype != np.int16:
            lo, hi = int(a.min()), int(a.max())
            if -32768 <= lo and hi <= 32767:
                a = a.astype(np.int16)
            elif a.dtype.kind == "u":
                a = a.astype(np.int64) if hi <= np.iinfo(np.int64).max else np.full(a.shape, -1, np.int64)
        return a

    def random_actions(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """A uniformly random legal action for every env's current state (:attr:`last`'s mask).

        For random play and epsilon-greedy exploration: ``env.step(env.random_actions())``.
        Returns int32 ``[N]``; ``out`` (a writeable int32 array of shape ``[N]``)
        is filled and returned when given. Over HTTP the draws are made here with
        numpy, from a generator seeded by the session's seed (``make(seed=...)``)
        and re-seeded by ``reset(seed)``; in process (:mod:`dgenv.inproc`) the
        engine draws them in Go from its own seeded generator, so the two
        transports give different (each reproducible) actions.

        Raises:
            DgenvError: no batch yet (call :meth:`reset` first).
        """
        if self.last is None:
            raise DgenvError("no batch yet: call reset() first")
        n = self.spec.num_envs
        if out is not None and (type(out) is not np.ndarray or out.dtype != np.int32 or out.shape != (n,)
                                or not out.flags.writeable):
            raise ValueError(f"out: want a writeable int32 array of shape ({n},)")
        rng = self._pick_rng
        if rng is None:
            rng = self._pick_rng = np.random.default_rng((self._create_body or {}).get("seed"))
        mask = np.asarray(self.last.mask, dtype=np.bool_).reshape(n, -1)
        cum = np.cumsum(mask, axis=1, dtype=np.int32)
        k = (rng.random(n) * cum[:, -1]).astype(np.int32)  # 0..count-1
        a = (cum <= k[:, None]).sum(axis=1, dtype=np.int32)  # the (k+1)-th legal action
        if out is None:
            return a
        out[:] = a
        return out

    def record(self, k: int) -> dict[str, Any]:
        """Game records of env ``k``: ``{"finished": record or None, "current": record}``.

        A record is ``{"game", "deals": [{"dealer", "hands", "plays", "scores"}], "totals"}``
        (API.md, "Game records").
        """
        ans = self._call("GET", f"/envs/{record_index(k, self.num_envs)}/record")
        return dict(ans)

    def close(self) -> None:
        """End the session on the server (DELETE) and close the connection. Idempotent."""
        if self._closed:
            return
        if self._http._pending is not None:  # a step_async's answer first, or the DELETE would get it
            try:
                self._http.receive(session_route=True, raw=True)
            except DgenvError:
                pass
        self._inflight = None
        try:
            self._http.request("DELETE", self._path, None, session_route=True)
        except DgenvError:
            pass  # already gone or server stopped: nothing left to free
        finally:
            self._closed = True
            self._http.close()

    def __del__(self) -> None:
        try:
            self._http.close()
        except Exception:
            pass
