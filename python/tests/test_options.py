"""EnvOptions: one options object that every adapter passes through to Client.make."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv import EnvOptions
from dgenv.client import create_body, game_body


def test_game_body_merges_the_game_and_make_keywords() -> None:
    assert game_body() == {}
    assert game_body("david_goliath", players=3) == {"name": "david_goliath", "players": 3}
    assert game_body({"name": "x", "n": 5}, deals=2) == {"name": "x", "n": 5, "deals": 2}
    assert game_body({"players": 3}, players=3) == {"players": 3}
    with pytest.raises(ValueError, match="players"):
        game_body({"players": 3}, players=4)
    with pytest.raises(TypeError, match="game"):
        game_body(3)  # type: ignore[arg-type]
    body = create_body(None, 4, 2, 7, [0], "random", "points", None, None, "bits")
    assert body == {"game": {"players": 4}, "num_envs": 2, "reward": "points", "seed": 7,
                    "learner_seats": [0], "opponent": "random", "packing": "bits"}


def test_make_with_no_players_is_the_card_games_default(make) -> None:
    env = make(num_envs=1, seed=1)
    assert env.players == 4 and env.game == "david_goliath"
    assert env.spec.params == {"players": 4, "deals": 4, "first_dealer": 0}


def test_openspiel_env_takes_obs_dtype_and_seed_from_options(client: dgenv.Client) -> None:
    from dgenv.openspiel import Environment

    ref = client.make(players=3, num_envs=1, seed=11, obs_dtype=np.uint8)
    first = ref.reset(seed=11)
    want, seat = first.obs[0], int(first.player[0])
    ref.close()
    env = Environment(options=EnvOptions(players=3, seed=11, obs_dtype="uint8", client=client))
    try:
        assert env.env.obs_dtype == np.uint8 and env.num_players == 3
        ts = env.reset()
        assert ts.observations["current_player"] == seat
        assert ts.observations["info_state"][seat] == want.tolist()
        assert all(isinstance(x, int) for x in ts.observations["info_state"][seat])
    finally:
        env.close()


def test_pettingzoo_takes_seed_and_obs_dtype_from_options(client: dgenv.Client) -> None:
    from dgenv.pettingzoo import AECEnv

    opts = EnvOptions(players=3, seed=5, obs_dtype="uint8", client=client)
    a, b = AECEnv(options=opts), AECEnv(options=opts)
    try:
        a.reset()
        b.reset()
        oa, ob = a.observe(a.agent_selection), b.observe(b.agent_selection)
        assert oa["observation"].dtype == np.uint8
        np.testing.assert_array_equal(oa["observation"], ob["observation"])  # same seed, same deal
        assert a.num_agents == 3
    finally:
        a.close()
        b.close()


def test_a_keyword_that_differs_from_its_default_wins_over_options(client: dgenv.Client) -> None:
    from dgenv.gymnasium import VectorEnv

    venv = VectorEnv(2, options=EnvOptions(players=5, opponent="random", client=client), players=3)
    try:
        assert venv.env.players == 3 and venv.env.spec.opponent == "random"
    finally:
        venv.close()


def test_options_an_adapter_cannot_honour_are_refused(client: dgenv.Client) -> None:
    from dgenv.openspiel import Environment
    from dgenv.pettingzoo import AECEnv

    with pytest.raises(ValueError, match="opponent"):
        AECEnv(options=EnvOptions(opponent="random", client=client))
    with pytest.raises(ValueError, match="illegal_action"):
        Environment(options=EnvOptions(illegal_action="raise", client=client))
    with pytest.raises(TypeError, match="EnvOptions"):
        AECEnv(options={"players": 3}, client=client)  # type: ignore[arg-type]


def test_single_seat_adapters_take_their_seat_from_options(client: dgenv.Client) -> None:
    from dgenv.gymnasium import Env
    from dgenv.sb3 import VecEnv

    env = Env(options=EnvOptions(learner_seats=[2], opponent="random", client=client))
    try:
        assert env.learner_seat == 2 and env.env.spec.learner_seats == (2,)
    finally:
        env.close()
    with pytest.raises(ValueError, match="one seat"):
        VecEnv(2, options=EnvOptions(learner_seats=[0, 1], client=client))
    with pytest.raises(ValueError, match="learner_seat"):
        Env(client, players=3, learner_seat=3)
    with pytest.raises(dgenv.BadRequest, match="learner") as ei:
        Env(client, learner_seat=4)  # 4 players by default: the server names the field
    assert ei.value.details.get("field") == "learner_seats"


def test_rllib_env_config_takes_options_and_fields() -> None:
    from dgenv.rllib import MultiAgentEnv

    env = MultiAgentEnv({"options": EnvOptions(players=3, seed=2, client="inproc"), "opponent": "random"})
    try:
        assert env.env.players == 3 and env.seats == [0] and env.env.spec.opponent == "random"
    finally:
        env.close()
    with pytest.raises(ValueError, match="unknown keys"):
        MultiAgentEnv({"colour": 1})
    with pytest.raises(ValueError, match="float32"):
        MultiAgentEnv({"obs_dtype": "uint8", "client": "inproc"})


def test_envoptions_make_kwargs_and_replace() -> None:
    o = EnvOptions(game="david_goliath", players=3, seed=1)
    kw = o.replace(opponent="random", learner_seats=(1,)).make_kwargs(num_envs=4)
    assert kw == {"game": "david_goliath", "players": 3, "deals": None, "seed": 1, "packing": None,
                  "opponent": "random", "learner_seats": [1], "reward": "points", "num_envs": 4}
    assert "obs_dtype" not in kw  # None: the adapter's default
    with pytest.raises(ValueError, match="unknown options"):
        EnvOptions.from_mapping({"seeds": 1})
