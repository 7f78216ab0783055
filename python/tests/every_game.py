"""Every game of a build through the in-process library, Gymnasium, PettingZoo and dgeval.

Run by ``test_games.py`` as a script in a fresh process, because a process
holds one Go runtime: ``$DGENV_LIB`` names the library to load (the test
build, ``bin/libdgenv-testgame.so``), and the arguments name the HTTP
server of the same build and its dgeval::

    DGENV_LIB=bin/libdgenv-testgame.so python every_game.py URL bin/dgeval-testgame OUT.json

Nothing here names a game: the games are those the library lists, and each
is checked the same way. OUT.json receives what was checked, per game.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

import dgenv
from dgenv import EnvOptions
from dgenv.gymnasium import Env, VectorEnv
from dgenv.pettingzoo import AECEnv


def same_as_http(local: dgenv.LocalClient, http: dgenv.Client, name: str) -> int:
    """The in-process batch equals the server's, step for step, on random legal actions."""
    a = http.make(game=name, num_envs=8, seed=3, obs_dtype=None)
    b = local.make(game=name, num_envs=8, seed=3, obs_dtype=None)
    steps = 0
    try:
        assert a.spec.obs == b.spec.obs and a.num_actions == b.num_actions and a.players == b.players
        rng = np.random.default_rng(0)
        x, y = a.reset(seed=3), b.reset(seed=3)
        for _ in range(60):
            for f in ("obs", "mask", "player", "rewards", "done", "scores"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f"{name}: {f}")
            assert x.mask.any(axis=1).all(), f"{name}: an env with no legal action"
            act = np.argmax(rng.random(x.mask.shape) * x.mask, axis=1)
            x, y = a.step(act), b.step(act)
            steps += 1
        return b.players
    finally:
        a.close()
        b.close()


def gymnasium(local: dgenv.LocalClient, name: str) -> None:
    """Gymnasium's own checker on the single env; the vector env steps and ends games."""
    env = Env(local, game=name, opponent="random", seed=1)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()
    venv = VectorEnv(4, options=EnvOptions(game=name, opponent="random", seed=2, client=local))
    try:
        obs, info = venv.reset(seed=2)
        ends = 0
        for _ in range(400):
            a = venv.action_space.sample(mask=info["action_mask"])
            obs, rew, term, trunc, info = venv.step(a)
            assert venv.single_observation_space.contains(obs[0]), name
            ends += int(term.sum())
            if ends:
                break
        assert ends > 0, f"{name}: no game ended in 400 vector steps"
    finally:
        venv.close()


def pettingzoo(local: dgenv.LocalClient, name: str) -> None:
    """PettingZoo's own API test on the AEC env."""
    aec = AECEnv(local, game=name)
    try:
        api_test(aec, num_cycles=50)
    finally:
        aec.close()


def dgeval(binary: str, name: str, players: int, bots: list[str]) -> dict:
    """dgeval of the same build plays a short match of the game between its bots."""
    agents = [bots[i % len(bots)] for i in range(players)]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "eval.json"
        r = subprocess.run([binary, "-game", name, "-agents", ",".join(agents), "-games", "12", "-seed", "5",
                            "-quiet", "-json", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{name}: dgeval: {r.stdout}{r.stderr}"
        summary = json.loads(out.read_text())
    assert summary["games"] == 12 and summary["players"] == players, summary
    assert {a["name"] for a in summary["agents"]} == set(agents), summary
    return summary


def main(url: str, dgeval_bin: str, out: str) -> None:
    local = dgenv.local()
    http = dgenv.Client(url)
    names = [g.name for g in local.games()]
    assert names == [g.name for g in http.games()], "the library and the server of one build list different games"
    report: dict[str, dict] = {}
    for g in local.games():
        players = same_as_http(local, http, g.name)
        gymnasium(local, g.name)
        pettingzoo(local, g.name)
        bots = sorted(g.raw.get("bots") or ["random"])
        summary = dgeval(dgeval_bin, g.name, players, [b for b in bots if b != "search"] or ["random"])
        report[g.name] = {"players": players, "inproc_equals_http": True, "gymnasium": True, "pettingzoo": True,
                          "dgeval_games": summary["games"], "bots": bots}
    Path(out).write_text(json.dumps({"games": names, "checked": report}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
