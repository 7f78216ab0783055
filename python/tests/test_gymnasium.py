"""Gymnasium adapters, checked with gymnasium's own env checker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gymnasium
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dgenv
from dgenv.gymnasium import Env, VectorEnv

from conftest import random_legal


def test_single_env_passes_gymnasium_check_env(client: dgenv.Client) -> None:
    env = Env(client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env, skip_render_check=True)
    env.close()


def test_single_env_plays_whole_games_with_masked_actions(client: dgenv.Client) -> None:
    env = Env(client, players=3, learner_seat=1, opponent="random")
    rng = np.random.default_rng(0)
    for episode in range(2):
        obs, info = env.reset(seed=episode)
        total, steps, done = 0.0, 0, False
        while not done:
            assert env.observation_space.contains(obs)
            mask = info["action_mask"]
            np.testing.assert_array_equal(mask, env.action_masks())
            a = int(rng.choice(np.flatnonzero(mask)))
            obs, r, done, trunc, info = env.step(a)
            assert not trunc
            total += r
            steps += 1
        assert steps == 15 * 3  # the learner plays one card per trick, 3 deals of 15
        assert total == info["scores"][1]  # points: the rewards add up to the learner's total
    env.close()


def test_single_env_illegal_action_raise(client: dgenv.Client) -> None:
    env = Env(client, illegal_action="raise")
    _, info = env.reset(seed=1)
    with pytest.raises(dgenv.IllegalActionError):
        env.step(int(np.flatnonzero(info["action_mask"] == 0)[0]))
    env.step(int(np.flatnonzero(info["action_mask"])[0]))  # nothing was stepped: still usable
    env.close()


def test_single_env_illegal_action_gets_the_penalty_and_ends(client: dgenv.Client) -> None:
    env = Env(client, illegal_action_reward=-5.0)
    _, info = env.reset(seed=1)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, r, term, trunc, info = env.step(illegal)
    assert (r, term, trunc, info["illegal_action"]) == (-5.0, True, False, True)
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset()
    env.close()


def test_vector_env_same_step_autoreset_and_plays(client: dgenv.Client) -> None:
    n = 16
    venv = VectorEnv(n, client, players=3, opponent="random", seed=7, autoreset_mode="same_step")
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.num_envs == n
    obs, info = venv.reset(seed=3)
    assert obs.shape == (n, venv.single_observation_space.shape[0])
    assert venv.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    ends = 0
    returns = np.zeros(n)
    for t in range(46):  # 3 deals x 15 tricks: every game ends at the 45th learner step
        mask = info["action_mask"]
        np.testing.assert_array_equal(mask, venv.action_masks())
        assert mask.shape == (n, 90) and mask.any(axis=1).all()
        obs, rew, term, trunc, info = venv.step(random_legal(mask, rng))
        assert rew.shape == (n,) and term.dtype == np.bool_ and not trunc.any()
        returns += rew
        if term.any():
            ends += int(term.sum())
            np.testing.assert_array_equal(info["_final_obs"], term)
            np.testing.assert_allclose(returns[term], info["scores"][term][:, 0])
            returns[term] = 0
            # SAME_STEP: the observation is already the next game's first one.
            hand = venv.env.section(obs[term], "hand")
            assert (hand.sum(axis=1) == 15).all()
    assert ends == n
    assert venv.observation_space.contains(obs)
    venv.close()


def test_vector_env_next_step_autoreset_is_the_default_and_plays(client: dgenv.Client) -> None:
    n = 8
    venv = VectorEnv(n, client, players=3, opponent="random")
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = venv.reset(seed=3)
    rng = np.random.default_rng(0)
    returns = np.zeros(n)
    for t in range(45):
        obs, rew, term, trunc, info = venv.step(random_legal(info["action_mask"], rng))
        returns += rew
        assert term.all() == (t == 44) and not trunc.any()
    # The step that ends the game: the terminal observation (zeros), no legal action.
    assert not obs.any() and not info["action_mask"].any()
    np.testing.assert_allclose(returns, info["scores"][:, 0])
    assert info["_scores"].all() and (info["games"] == 1).all()
    assert "final_obs" not in info
    # The next step ignores the actions and shows the next game's first observation.
    obs, rew, term, trunc, info = venv.step(np.full(n, 89))
    assert not rew.any() and not term.any() and not info["_scores"].any()
    assert (venv.env.section(obs, "hand").sum(axis=1) == 15).all()
    assert info["action_mask"].any(axis=1).all()
    venv.step(random_legal(info["action_mask"], rng))
    venv.close()


def test_next_step_and_same_step_play_the_same_games(client: dgenv.Client) -> None:
    """NEXT_STEP is SAME_STEP with one extra (skipped) step after each game's end."""
    nxt = VectorEnv(4, client, players=3, opponent="random", deals=1, autoreset_mode="next_step")
    same = VectorEnv(4, client, players=3, opponent="random", deals=1, autoreset_mode="same_step")
    on, inx = nxt.reset(seed=11)
    os_, isa = same.reset(seed=11)
    rng = np.random.default_rng(1)
    for _ in range(2 * 15):  # two one-deal games
        np.testing.assert_array_equal(on, os_)
        a = random_legal(isa["action_mask"], rng)
        on, rn, tn, _, inx = nxt.step(a)
        os_, rs, ts, _, isa = same.step(a)
        np.testing.assert_array_equal(rn, rs)
        np.testing.assert_array_equal(tn, ts)
        if tn.any():
            assert tn.all() and not on.any()
            on, rn, tn, _, inx = nxt.step(a)  # the reset step
            assert not rn.any() and not tn.any()
    nxt.close()
    same.close()


def test_vector_env_works_under_gymnasiums_vector_wrappers(client: dgenv.Client) -> None:
    from gymnasium.wrappers import vector as vw

    n = 6
    base = VectorEnv(n, client, players=3, opponent="random", deals=1)
    env = vw.RecordEpisodeStatistics(base)
    env = vw.ClipReward(vw.NormalizeReward(env), -10.0, 10.0)
    env = vw.NormalizeObservation(vw.FlattenObservation(vw.DtypeObservation(env, np.float64)))
    obs, info = env.reset(seed=1)
    assert obs.dtype == np.float64 and obs.shape == (n, base.single_observation_space.shape[0])
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(3 * 16):
        actions = env.action_space.sample(mask=info["action_mask"])
        obs, rew, term, trunc, info = env.step(actions)
        assert np.isfinite(obs).all() and np.isfinite(rew).all() and (np.abs(rew) <= 10).all()
        assert "illegal_action" not in info  # sample(mask=...) drew legal actions only
        if term.any():
            assert info["_episode"].tolist() == term.tolist()
            np.testing.assert_allclose(info["episode"]["r"][term], info["scores"][term][:, 0])
            assert (info["episode"]["l"][term] == 15).all()
            episodes += int(term.sum())
    assert episodes == 3 * n
    env.close()


def test_masks_are_what_action_space_sample_takes(client: dgenv.Client) -> None:
    venv = VectorEnv(5, client)
    _, info = venv.reset(seed=4)
    mask = info["action_mask"]
    for m in (mask, tuple(mask.astype(np.int8))):  # the info's array or Gymnasium's tuple of int8 rows
        a = venv.action_space.sample(mask=m)
        assert a.shape == (5,) and mask[np.arange(5), a].all()
    venv.close()
    env = Env(client)
    _, info = env.reset(seed=4)
    for _ in range(10):
        assert info["action_mask"][env.action_space.sample(mask=info["action_mask"])] == 1
    env.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vector_env_illegal_action_ends_that_game_with_the_penalty(client: dgenv.Client, mode: str) -> None:
    n = 4
    venv = VectorEnv(n, client, players=3, opponent="random", autoreset_mode=mode, illegal_action_reward=-3.0)
    _, info = venv.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(5):
        _, _, _, _, info = venv.step(random_legal(info["action_mask"], rng))
    a = random_legal(info["action_mask"], rng)
    a[1] = int(np.flatnonzero(~info["action_mask"][1])[0])
    obs, rew, term, trunc, info = venv.step(a)
    assert term.tolist() == [False, True, False, False] and rew[1] == -3.0
    assert info["illegal_action"].tolist() == [False, True, False, False]
    if mode == "next_step":
        assert not obs[1].any()
        assert not info["action_mask"][1].any()
        obs, rew, term, _, info = venv.step(random_legal(info["action_mask"], rng))  # env 1's action is ignored
        assert rew[1] == 0 and not term.any() and "illegal_action" not in info
    # Env 1 starts a new game (15 cards in hand); the others play on.
    hands = venv.env.section(obs, "hand").sum(axis=1)
    assert hands[1] == 15 and (np.delete(hands, 1) < 15).all()
    assert info["action_mask"][1].any()
    venv.step(random_legal(info["action_mask"], rng))
    venv.close()


def test_vector_env_illegal_action_raise_steps_nothing(client: dgenv.Client) -> None:
    venv = VectorEnv(2, client, illegal_action="raise")
    _, info = venv.reset(seed=2)
    a = np.array([int(np.flatnonzero(~info["action_mask"][0])[0]), int(np.flatnonzero(info["action_mask"][1])[0])])
    with pytest.raises(dgenv.IllegalActionError):
        venv.step(a)
    with pytest.raises(ValueError, match="card id"):
        venv.step(np.array([-1, a[1]]))  # not taken for the server's "skip"
    venv.step(random_legal(info["action_mask"], np.random.default_rng(0)))  # still usable
    venv.close()


@pytest.mark.parametrize("packing", [None, "bits"])
def test_vector_env_is_deterministic_under_a_seed(client: dgenv.Client, packing) -> None:
    a, b = VectorEnv(4, client), VectorEnv(4, client, packing=packing)  # packed or not, the same
    oa, ia = a.reset(seed=5)
    ob, ib = b.reset(seed=5)
    np.testing.assert_array_equal(oa, ob)
    rng = np.random.default_rng(0)
    for _ in range(20):
        act = random_legal(ia["action_mask"], rng)
        oa, ra, *_, ia = a.step(act)
        ob, rb, *_, ib = b.step(act)
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
    a.close()
    b.close()


def test_adapters_without_a_client_use_dgenv_url(server: dgenv.LocalServer, monkeypatch) -> None:
    from dgenv import _clients as _common

    monkeypatch.setenv("DGENV_URL", server.url)
    monkeypatch.setattr(_common, "_default", None)
    env = Env()  # no client: $DGENV_URL
    assert env.client.url == server.url
    env.reset(seed=1)
    env.close()
    assert _common.default_server() is env.client  # shared by every adapter in the process


def test_registered_for_make_and_make_vec(client: dgenv.Client) -> None:
    from dgenv.gymnasium import ENV_ID

    env = gymnasium.make(ENV_ID, client=client, players=3)
    obs, info = env.reset(seed=2)
    assert env.observation_space.contains(obs) and info["action_mask"].any()
    env.close()
    venv = gymnasium.make_vec(ENV_ID, num_envs=8, vectorization_mode="vector_entry_point", client=client)
    obs, info = venv.reset(seed=2)
    assert obs.shape[0] == 8 and info["action_mask"].shape == (8, 90)
    venv.close()


def test_check_env_on_gymnasium_make_sets_a_picklable_spec(server: dgenv.LocalServer, monkeypatch) -> None:
    import pickle

    from dgenv import _clients as _common
    from dgenv.gymnasium import ENV_ID

    monkeypatch.setattr(_common, "_default", server)  # gymnasium.make(ENV_ID) without a client
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a spec that cannot be copied, or any checker warning, fails
        env = gymnasium.make(ENV_ID)
        check_env(env.unwrapped, skip_render_check=True)
        assert env.spec is not None and env.spec.id == ENV_ID
        env.close()
        env = gymnasium.make(ENV_ID, client=server, players=5)
        assert env.spec is not None and env.spec.kwargs["players"] == 5
        again = gymnasium.make(pickle.loads(pickle.dumps(env.spec)))  # same server, by URL
        assert again.unwrapped.client.url == server.url and again.observation_space == env.observation_space
        again.reset(seed=1)
        again.close()
        env.close()


def test_env_made_from_a_url_closes_its_connection(server: dgenv.LocalServer) -> None:
    import gc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for make in (lambda: Env(server.url), lambda: VectorEnv(2, server.url)):
            env = make()
            env.reset(seed=1)
            env.close()
            del env
            gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, [str(w.message) for w in leaks]


def test_async_make_vec_over_the_inproc_engine_refuses_fork_in_the_parent() -> None:
    # Gymnasium makes one env in the parent (loading the Go engine), then forks
    # its workers on Linux: they could not run the engine. The parent must say
    # so, naming the fix, before any worker starts.
    import multiprocessing

    import gymnasium

    from dgenv.gymnasium import ENV_ID

    context = "fork" if multiprocessing.get_start_method() != "fork" else None  # None: Linux's default, fork
    with pytest.raises(RuntimeError, match=r"spawn.*vector_kwargs=\{'context': 'spawn'\}"):
        gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={"context": context},
                           client="inproc", opponent="heuristic")
    assert not multiprocessing.active_children()  # refused before a worker was started


def test_async_make_vec_over_the_inproc_engine_runs_with_spawn() -> None:
    import gymnasium

    from dgenv.gymnasium import ENV_ID

    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={"context": "spawn"},
                              client="inproc", opponent="heuristic", players=3, deals=1)
    try:
        obs, info = envs.reset(seed=1)
        assert obs.shape[0] == 2 and info["action_mask"].any(axis=1).all()
        obs, rew, term, trunc, info = envs.step(np.argmax(info["action_mask"], axis=1))
        assert not trunc.any()
    finally:
        envs.close()
