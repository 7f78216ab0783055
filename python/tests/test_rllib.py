"""RLlib adapter: the MultiAgentEnv's turn-based protocol, and PPO with action
masking training one iteration with two env runners on a local Ray."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv.rllib import MultiAgentEnv


def _play(env: MultiAgentEnv, rng: np.random.Generator, seed: int) -> tuple[dict[str, float], dict]:
    obs, _ = env.reset(seed=seed)
    returns = {a: 0.0 for a in env.agents}
    for _ in range(1000):
        assert len(obs) == 1  # only the agent to act observes
        (agent, o), = obs.items()
        assert set(o) == {"observations", "action_mask"} and o["action_mask"].dtype == np.float32
        assert env.observation_spaces[agent].contains(o)
        a = int(rng.choice(np.flatnonzero(o["action_mask"])))
        obs, rew, term, trunc, info = env.step({agent: a})
        for x, r in rew.items():
            returns[x] += r
        assert not trunc["__all__"]
        if term["__all__"]:
            assert set(obs) == set(env.agents)  # a final observation for every agent
            assert not any(o["action_mask"].any() for o in obs.values())
            return returns, info
    raise AssertionError("the game did not end")


def test_self_play_env_is_turn_based_and_rewards_add_up(client: dgenv.Client) -> None:
    env = MultiAgentEnv({"url": client.url, "players": 3, "deals": 1})
    assert env.agents == ["player_0", "player_1", "player_2"]
    returns, info = _play(env, np.random.default_rng(0), seed=1)
    scores = info["player_0"]["scores"]
    assert returns == {f"player_{s}": float(scores[s]) for s in range(3)}
    env.close()


def test_env_against_the_servers_bots_has_the_learner_seats_as_agents(client: dgenv.Client) -> None:
    env = MultiAgentEnv({"url": client.url, "opponent": "heuristic", "learner_seats": [1], "reward_scale": 0.5})
    assert env.agents == ["player_1"]
    returns, info = _play(env, np.random.default_rng(1), seed=2)
    assert returns["player_1"] == 0.5 * info["player_1"]["scores"][1]
    env.close()


def test_env_without_url_uses_the_process_server(server: dgenv.LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from dgenv import _clients as _common

    monkeypatch.setattr(_common, "_default", server)
    env = MultiAgentEnv({"players": 4})
    assert env.client is server
    env.reset(seed=0)
    env.close()


def test_illegal_action_ends_the_game_or_raises(client: dgenv.Client) -> None:
    env = MultiAgentEnv({"url": client.url, "illegal_action_reward": -2.0})
    obs, _ = env.reset(seed=3)
    (agent, o), = obs.items()
    bad = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rew, term, _, info = env.step({agent: bad})
    assert term["__all__"] and info[agent]["illegal_action"]
    assert rew[agent] == -2.0 and all(r == 0 for x, r in rew.items() if x != agent)
    env.close()

    env = MultiAgentEnv({"url": client.url, "illegal_action": "raise"})
    obs, _ = env.reset(seed=3)
    with pytest.raises(dgenv.IllegalActionError):
        env.step({agent: bad})
    env.step({agent: int(np.flatnonzero(o["action_mask"])[0])})  # nothing was stepped
    env.close()
    with pytest.raises(ValueError, match="unknown keys"):
        MultiAgentEnv({"url": client.url, "player": 4})


@pytest.mark.parametrize("opponent", [None, "heuristic"])
def test_env_passes_rllibs_pre_check(client: dgenv.Client, opponent) -> None:
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    env = MultiAgentEnv({"url": client.url, "opponent": opponent})
    check_multiagent_environments(env)  # steps random (unmasked) actions: the default "terminate" applies
    env.close()


def test_ppo_trains_an_iteration_with_two_env_runners(client: dgenv.Client) -> None:
    from dgenv import rllib_train

    # Small on purpose (CI has 2 cores): 2 env runners, self-play, one iteration.
    lines = rllib_train.main(
        ["--env-runners", "2", "--iterations", "1", "--opponent", "self", "--players", "3", "--deals", "1",
         "--url", client.url, "--num-cpus", "3", "--train-batch-size", "256", "--minibatch-size", "128",
         "--epochs", "1", "--hiddens", "32", "--seed", "1"]
    )
    assert len(lines) == 1 and lines[0]["env_steps"] >= 256
    assert lines[0]["return_mean"] is not None and np.isfinite(lines[0]["return_mean"])


def test_evaluate_plays_the_modules_greedy_legal_action_on_fixed_deals(client: dgenv.Client) -> None:
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    from dgenv.rllib_train import evaluate

    torch.manual_seed(3)
    env = MultiAgentEnv({"url": client.url, "opponent": "heuristic"})
    module = RLModuleSpec(module_class=ActionMaskingTorchRLModule, observation_space=env.observation_spaces["player_0"],
                          action_space=env.action_spaces["player_0"],
                          model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": []}).build()
    env.close()
    got = evaluate(module, client, 6, 4, "heuristic", seed=5)
    assert got == evaluate(module, client, 6, 4, "heuristic", seed=5)  # the same deals, the same play
    assert got["games"] == 6

    # By hand: the module's unmasked logits (every action allowed), the best legal one played.
    b = (games := client.make(players=4, num_envs=6, seed=5, learner_seats=[0], opponent="heuristic",
                              obs_dtype=np.float32)).reset(seed=5)
    points: dict[int, int] = {}
    while len(points) < 6:
        with torch.no_grad():
            logits = module.forward_inference({"obs": {"observations": torch.as_tensor(b.obs),
                                                       "action_mask": torch.ones(b.mask.shape)}})["action_dist_inputs"]
        b = games.step(np.where(b.mask.astype(bool), logits.numpy(), -np.inf).argmax(axis=1))
        for i in np.flatnonzero(b.done):
            points.setdefault(int(i), int(b.scores[i][0]))
    games.close()
    assert got["points"]["mean"] == pytest.approx(np.mean(list(points.values())))
    other = evaluate(module, client, 6, 4, "heuristic", seed=6)
    assert other["points"] != got["points"] or other["opponents_points"] != got["opponents_points"]


def test_rllib_train_evaluates_before_and_after_training(client: dgenv.Client) -> None:
    from dgenv import rllib_train

    # Small on purpose (CI has 2 cores): one env runner, one tiny iteration, 10 evaluation games.
    lines = rllib_train.main(
        ["--env-runners", "1", "--iterations", "1", "--opponent", "heuristic", "--url", client.url,
         "--num-cpus", "2", "--train-batch-size", "128", "--minibatch-size", "64", "--epochs", "1",
         "--hiddens", "16", "--seed", "1", "--lr", "0.01", "--eval-games", "10"]
    )
    evals = [x for x in lines if "points" in x]
    assert [x["iteration"] for x in evals] == [0, 1] and all(x["games"] == 10 for x in evals)
    assert evals[1]["env_steps_total"] >= 128 and evals[1]["train_seconds"] > 0
    assert all(np.isfinite(x["points"]["mean"]) and x["points"]["mean"] >= 0 for x in evals)
    with pytest.raises(SystemExit):
        rllib_train.parse_args(["--eval-games", "10", "--opponent", "self"])


def test_rllib_train_takes_the_game_and_its_parameters(client: dgenv.Client) -> None:
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    from dgenv import rllib_train

    args = rllib_train.parse_args(["--game", "duel", "--opponent", "heuristic", "--url", client.url])
    cfg = rllib_train.env_config(args)
    assert cfg["game"] == "duel" and "players" not in cfg and "deals" not in cfg
    env = MultiAgentEnv(cfg)
    assert env.agents == ["player_0"] and env.action_spaces["player_0"].n == env.env.num_actions
    assert env.env.game == "duel" and env.env.players == 2
    returns, info = _play(env, np.random.default_rng(4), seed=3)
    assert returns["player_0"] == pytest.approx(0.1 * info["player_0"]["scores"][0])  # --reward-scale 0.1
    torch.manual_seed(1)
    module = RLModuleSpec(module_class=ActionMaskingTorchRLModule, observation_space=env.observation_spaces["player_0"],
                          action_space=env.action_spaces["player_0"],
                          model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": []}).build()
    env.close()
    got = rllib_train.evaluate(module, client, 4, args.players, "heuristic", 7, game=rllib_train.game_spec(args))
    assert got["games"] == 4 and -1 <= got["points"]["mean"] <= 1  # a duel pays -1, 0 or +1 a game

    card = rllib_train.env_config(rllib_train.parse_args(["--game-params", "players=5,deals=2"]))
    assert card["game"] == {"name": "david_goliath", "players": 5, "deals": 2} and "players" not in card
    assert rllib_train.env_config(rllib_train.parse_args(["--players", "3"]))["players"] == 3
    for bad in (["--game-params", "players=x"], ["--players", "3", "--game-params", "players=4"]):
        with pytest.raises(SystemExit):
            rllib_train.parse_args(bad)
