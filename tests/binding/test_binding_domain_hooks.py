"""The binding's hooks for domain code: checks when a spec loads, jointly drawn private info."""

from __future__ import annotations

import pytest
from binding_support import fruit_dict

from gtsteer.binding import ConfigError, Domain, DomainCheckError, make_instance
from gtsteer.domains import register_domain, spec_from_dict


def _hooked_check(spec) -> None:
    if spec.params.get("colour") != "blue":
        raise DomainCheckError("params.colour", f"must be blue, got {spec.params.get('colour')!r}")


async def _hooked_utility(ctx) -> list[float]:
    return [0.0, 0.0]


def _pairs(spec, rng, names):
    secret = rng.randint(0, 10**6)
    return [{"secret": str(secret)}, {"secret": str(-secret)}][: spec.params.get("count", 2)]


register_domain(Domain(name="hooked", joint_private_info=_pairs, utility=_hooked_utility,
                       validate=_hooked_check))
register_domain(Domain(name="pairs", joint_private_info=_pairs))


def hooked(**params) -> dict:
    data = fruit_dict()
    data["domain"] = "hooked"
    data["params"] = params
    return data


def test_domain_check_runs_at_load_and_names_the_field() -> None:
    assert spec_from_dict(hooked(colour="blue")).params["colour"] == "blue"
    with pytest.raises(ConfigError, match=r"x\.yaml: field `params\.colour`: must be blue"):
        spec_from_dict(hooked(colour="red"), "x.yaml")


def test_joint_generator_draws_all_players_together_and_deterministically() -> None:
    data = fruit_dict()
    data["domain"] = "pairs"
    spec = spec_from_dict(data)
    inst = make_instance(spec, 3, seed=1)
    a, b = (int(info["secret"]) for info in inst.private_info)
    assert a == -b and inst == make_instance(spec, 3, seed=1)
    assert make_instance(spec, 4, seed=1).private_info != inst.private_info


def test_joint_generator_must_cover_every_player() -> None:
    data = fruit_dict()
    data["domain"] = "pairs"
    data["params"]["count"] = 1
    with pytest.raises(ValueError, match="returned 1 players' private info"):
        make_instance(spec_from_dict(data), 0)



def test_the_domain_checks_run_once_when_the_spec_is_bound_not_per_game() -> None:
    # They ran in load_spec and again in every make_game (once per instance) before.
    from gtsteer.binding import generate_instances, make_game

    calls: list[str] = []
    counted = Domain(name="counted", joint_private_info=_pairs,
                     validate=lambda spec: calls.append(spec.name))
    data = fruit_dict() | {"domain": "counted"}
    spec = spec_from_dict(data, "counted.yaml", counted)
    games = [make_game(spec, inst, "fake") for inst in generate_instances(spec, 3)]
    assert calls == [spec.name] and all(g.domain is counted for g in games)
    spec.with_deals(2)  # a changed spec is checked again: its values are new
    assert len(calls) == 2
