"""`gtsteer evaluate CONFIG --policy DIR`: a distilled policy against baselines on fresh
dialogues played live, turn by turn (docs/IMITATION.md, "Live evaluation").

Table 1's fresh-sample contrast on instances the policy's dataset never held (trained on or held
out, any deal), each dialogue played as `gtsteer play` plays it (`play.play_dialogue`, the one
loop), the policy's seat asking the `Advisor` at each of its turns. Per instance and sample k,
every condition (every seat `any`; each player on its policy, greedy or uniform, the others
`any`) plays one game with `sample_offset` k, so all meet the same random numbers (paired
seeds) and a difference is the instructions' doing. Each instance is one unit of the context's
executor, saved as `instances/<index>.json` with the run's key once done: `resume` continues.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from gtsteer.binding import DialogueState, make_game, make_instance
from gtsteer.binding.instances import Instance, deal_instances, stable_int
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains import load_spec
from gtsteer.evals.paired import LiveStat, live_stats
from gtsteer.imitation.advisor import Advisor
from gtsteer.imitation.policy import CONFIG_FILE, WEIGHTS_FILE, read_config
from gtsteer.llm import LLM, LLMCalls
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.ledger import Ledger, hashed_key
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import (
    RunResult,
    check_out_dir,
    finish_run_dir,
)
from gtsteer.runs.play import Move, PlayedTurn, SeatPlayer, ended_by, play_dialogue, seat_players
from gtsteer.runs.solve import check_seed

SUMMARY_FILE = "evaluate.json"
ROWS_DIR = "instances"
#: The row format; part of the run key, so a resumed run never keeps rows of another format.
ROW_VERSION = 1
BASELINES = ("any", "greedy", "uniform")
#: How many generated instances past the wanted count are looked at for fresh ones.
EXTRA_CANDIDATES = 1000


class EvaluateError(ValueError):
    """A policy that says nothing of its training instances, or too few fresh instances."""


class LiveDialogue(BaseModel):
    """One played dialogue: the condition, who deviated, its messages and what it paid."""

    #: `any` (every seat unguided), `policy`, `greedy` or `uniform` (at `player`'s seat).
    condition: str
    #: The seat that plays `condition` (None: the all-`any` dialogue).
    player: int | None
    sample: int
    seats: list[str]
    turns: list[PlayedTurn]
    ended_by: str
    returns: list[float]


class LiveVersus(BaseModel):
    """A player's payoff with its policy minus with a baseline (others on `any`), mean over
    the instance's samples."""

    player: int
    baseline: str
    policy_value: float
    baseline_value: float
    gain: float


class LiveInstanceRow(BaseModel):
    """`instances/<index>.json`: every dialogue of one fresh instance and its paired gains."""

    run_key: str
    index: int
    instance: Instance
    dialogues: list[LiveDialogue]
    versus: list[LiveVersus]


class TrainingSet(BaseModel):
    """The instances of the policy's dataset, as its `config.json` names them."""

    seed: int
    #: Where `seed` was read: `metadata.instance_seed`, or `metadata.train.seed` for a policy
    #: written before the instance seed was recorded (`gtsteer imitate` used one seed for both).
    seed_from: str
    num_deals: int
    train_instances: list[int]
    heldout_instances: list[int]


class SkippedInstance(BaseModel):
    index: int
    #: The dataset instance whose private information it repeats.
    same_as: int


class EvaluateLiveResult(RunResult):
    """evaluate.json: the settings, which instances were skipped and why, and the gains."""

    config: str
    domain: str
    model: str
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    policy: str
    features: str
    run_key: str
    seed: int
    samples: int
    training: TrainingSet
    instances: list[int]
    skipped: list[SkippedInstance]
    baselines: list[str]
    notes: list[str]
    stats: list[LiveStat]
    llm_calls: LLMCalls


class EvaluateLiveOptions(Options):
    """`gtsteer evaluate`'s options (the model, the folder and the executor come with the
    run context)."""

    #: The distilled policy's folder (`gtsteer imitate`'s `model/`).
    policy: str
    #: How many fresh instances are evaluated.
    games: int = Field(20, ge=1)
    #: Seed of the generated instances (as `gtsteer solve --seed`) and of the draws.
    seed: int = 0
    #: Dialogues per condition and instance (sample offsets 0 .. samples - 1).
    samples: int = Field(1, ge=1)
    #: Keep the rows an earlier run with the same key wrote (`--resume`).
    resume: bool = False


# ---- the training set and fresh instances -----------------------------------------------------


def training_set(policy_dir: str | Path) -> TrainingSet:
    """The dataset instances a policy's `config.json` names; refused when it names none."""
    meta = read_config(policy_dir).metadata
    if "train_instances" not in meta:
        raise EvaluateError(f"--policy {policy_dir}: its {CONFIG_FILE} names no training "
                            "instances (metadata.train_instances), so fresh instances cannot be "
                            "told from trained ones; train it with gtsteer imitate")
    if "instance_seed" in meta:
        seed, seed_from = int(meta["instance_seed"]), "metadata.instance_seed"
    else:
        seed, seed_from = int(meta.get("train", {}).get("seed", 0)), "metadata.train.seed"
    return TrainingSet(seed=seed, seed_from=seed_from, num_deals=int(meta.get("num_deals", 1)),
                       train_instances=sorted(meta["train_instances"]),
                       heldout_instances=sorted(meta.get("heldout_instances", [])))


def _content(instance: Instance) -> str:
    """What the players of an instance are told (names, scenario, opening, private
    information): two instances alike in it are one situation to the policy, whatever their
    index or sample seed."""
    return json.dumps(instance.model_dump(mode="json", exclude={"index", "seed", "deal"}),
                      sort_keys=True)


def fresh_instances(spec: DomainSpec, games: int, seed: int, trained: TrainingSet
                    ) -> tuple[list[Instance], list[SkippedInstance]]:
    """Generated instances 0, 1, ... of `seed` that are no instance of the policy's dataset
    (any deal of it; `_content`), until `games` are found; and those skipped."""
    dealt = spec.with_deals(trained.num_deals) if trained.num_deals > 1 else spec
    seen: dict[str, int] = {}
    for j in sorted(set(trained.train_instances) | set(trained.heldout_instances)):
        for deal in deal_instances(dealt, make_instance(spec, j, trained.seed)):
            seen.setdefault(_content(deal), j)
    fresh: list[Instance] = []
    skipped: list[SkippedInstance] = []
    limit = games + len(seen) + EXTRA_CANDIDATES
    for index in range(limit):
        if len(fresh) == games:
            break
        instance = make_instance(spec, index, seed)
        same = seen.get(_content(instance))
        if same is None:
            fresh.append(instance)
        else:
            skipped.append(SkippedInstance(index=index, same_as=same))
    if len(fresh) < games:
        raise EvaluateError(f"--games {games}: only {len(fresh)} of the first {limit} instances "
                            f"of seed {seed} are not in the policy's dataset (the config's "
                            "instances repeat)")
    return fresh, skipped


# ---- one instance (a unit of work) ------------------------------------------------------------


@dataclass(frozen=True)
class LiveJob:
    """One fresh instance's dialogues, as a serial loop or a Ray task receives it."""

    spec: DomainSpec
    config: str
    policy: str
    instance: Instance
    seed: int
    samples: int
    baselines: tuple[str, ...]
    run_key: str


def _uniform(labels: Sequence[str], rng: random.Random) -> SeatPlayer:
    def uniform(state: DialogueState, p: int) -> Move:
        return Move(labels[rng.randrange(len(labels))])

    return uniform


def _conditions(job: LiveJob) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = [("any", None)]
    for p in range(job.spec.num_players):
        out.append(("policy", p))
        out += [(b, p) for b in job.baselines if b != "any"]
    return out


def play_instance(job: LiveJob, model: LLM) -> LiveInstanceRow:
    """Every condition's dialogues of `job.instance`, each sample on its own game (offset k)
    shared by every condition, and each player's paired gains."""
    spec, instance = job.spec, job.instance
    labels = spec.instructions()
    dialogues = []
    for k in range(job.samples):
        game = make_game(spec, instance, model, config=job.config, seed=job.seed,
                         sample_offset=k)
        # the policy's draws: one stream per seat, instance and sample (seat_players seeds it)
        draws = stable_int("gtsteer-evaluate", job.seed, k)
        for condition, player in _conditions(job):
            seats = ["any"] * spec.num_players
            if player is not None:
                seats[player] = (f"policy:{job.policy}" if condition == "policy" else condition)
            players = seat_players(spec, instance, ["any" if s == "uniform" else s
                                                    for s in seats], draws, None)
            if condition == "uniform" and player is not None:
                rng = random.Random(stable_int("gtsteer-evaluate-uniform", job.seed,
                                               instance.index, player, k))
                players[player] = _uniform(labels, rng)
            state, turns = play_dialogue(game, players, seats)
            dialogues.append(LiveDialogue(
                condition=condition, player=player, sample=k, seats=seats, turns=turns,
                ended_by=ended_by(game, state), returns=[float(v) for v in state.returns()]))
    return LiveInstanceRow(run_key=job.run_key, index=instance.index, instance=instance,
                           dialogues=dialogues, versus=versus(dialogues, spec.num_players,
                                                              job.baselines))


def versus(dialogues: Sequence[LiveDialogue], players: int, baselines: Sequence[str]
           ) -> list[LiveVersus]:
    """Each player's mean payoff over the samples with its policy and with each baseline (the
    `any` baseline is the all-`any` dialogue), and their difference."""

    def value(condition: str, player: int) -> float:
        got = [d.returns[player] for d in dialogues if d.condition == condition
               and d.player == (None if condition == "any" else player)]
        return sum(got) / len(got)

    out = []
    for p in range(players):
        mine = value("policy", p)
        for baseline in baselines:
            theirs = value(baseline, p)
            out.append(LiveVersus(player=p, baseline=baseline, policy_value=mine,
                                  baseline_value=theirs, gain=mine - theirs))
    return out


# ---- the run ----------------------------------------------------------------------------------


def policy_digest(policy_dir: str | Path) -> str:
    """sha256 of the policy's files: a retrained policy in the same folder is another run."""
    digest = hashlib.sha256()
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        digest.update((Path(policy_dir) / name).read_bytes())
    return digest.hexdigest()


def run_key(spec: DomainSpec, model: str, digest: str, seed: int, samples: int,
            baselines: Sequence[str]) -> str:
    """What a saved row must have been made with to be kept by `resume`: the bound spec, the
    model, the policy's files, the seed, the samples and the baselines (not `games`, so a
    larger `--games` extends a run)."""
    return hashed_key(spec.model_dump(mode="json"), spec.hooks.fingerprint(), model, digest,
                      seed, samples, list(baselines), ROW_VERSION)


@driver("evaluate")
def run(config: str | Path, ctx: RunContext, options: EvaluateLiveOptions
        ) -> EvaluateLiveResult:
    """`gtsteer evaluate`: play each fresh instance's conditions, save each instance's row,
    write `evaluate.json` (default folder `results/evaluate/<config stem>-<llm>-<seed>`)."""
    if ctx.out is not None:
        check_out_dir(ctx.out)
    check_seed(options.seed)
    spec = load_spec(config)
    policy = str(options.policy)
    trained = training_set(policy)
    fresh, skipped = fresh_instances(spec, options.games, options.seed, trained)
    notes = []
    baselines = list(BASELINES)
    if spec.hooks.greedy is None:
        baselines.remove("greedy")
        notes.append(f"greedy: skipped, the domain of {spec.name!r} has no greedy hook")
    # the policy fits the config and greedy names an instruction, before any model call
    Advisor(spec, policy)
    if "greedy" in baselines:
        for instance in fresh:
            seat_players(spec, instance, ["greedy"] * spec.num_players, options.seed, None)
    if skipped:
        notes.append(f"skipped {len(skipped)} generated instance(s) the policy's dataset held "
                     "(trained on or held out): "
                     + ", ".join(f"{s.index} (= {s.same_as})" for s in skipped))
    features = read_config(policy).features
    model, _, role_models = ctx.roles(spec)
    out = ctx.folder("evaluate", config, model, options.seed)
    key = run_key(spec, model.model, policy_digest(policy), options.seed, options.samples,
                  baselines)
    ledger = Ledger.open(out, ROWS_DIR, key, LiveInstanceRow, resume=options.resume,
                         summary=SUMMARY_FILE)
    wanted = {i.index: i for i in fresh}  # a row made for another instance is played again
    kept = ledger.kept(wanted, lambda i, row: row.index == i and row.instance == wanted[i]) \
        if options.resume else {}
    if ctx.report is not None and kept:  # the notes are the result's (the CLI prints them)
        ctx.report(f"resuming: {len(kept)} of {len(fresh)} instances already played in {out}")
    jobs = [LiveJob(spec, str(config), policy, instance, options.seed, options.samples,
                    tuple(baselines), key) for instance in fresh if instance.index not in kept]

    before = model.usage
    done = ctx.executor.run(play_instance, jobs, model,
                            on_result=lambda _, row: ledger.add(row.index, row),
                            label="instances")
    played = {row.index: row for row in done.values}
    rows = [kept.get(i.index) or played[i.index] for i in fresh]
    result = EvaluateLiveResult(
        config=str(config), domain=spec.name, model=model.model, roles=role_models,
        policy=policy, features=features, run_key=key, seed=options.seed,
        samples=options.samples, training=trained, instances=[i.index for i in fresh],
        skipped=skipped, baselines=baselines, notes=notes,
        stats=live_stats([v for r in rows for v in r.versus], spec.players, baselines),
        llm_calls=model.usage.since(before))
    finish_run_dir(out, SUMMARY_FILE, result)
    return result.written_to(out)


__all__ = ["EvaluateError", "EvaluateLiveOptions", "EvaluateLiveResult", "LiveInstanceRow",
           "fresh_instances", "play_instance", "run",
           "training_set"]
