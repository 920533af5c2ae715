"""Every message of a tree is drawn from its own random stream, and the instructions at a node
share one (common random numbers).

Before, sample k of every speaker, depth and instruction had the same seed: llama.cpp's
sampler draws by inverse CDF, so a path of samples (k, k, ...) was a chain of coupled draws
(science review 66ff82a, M1).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from binding_support import message_seeds
from psro_helpers import CountingBackend

from gtsteer.binding import expand_sync, generate_instances, make_game
from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.llm.types import GenerationRequest, RawCompletion

TONE = "gtsteer/configs/schedule_meeting_tone.yaml"


class RecordingBackend(CountingBackend):
    """Counting messages; records each message request's seed by its prompt."""

    def __init__(self) -> None:
        super().__init__()
        self.seeds: list[tuple[str, int]] = []

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        if json_schema is None and request.temperature > 0.0:
            self.seeds.append((request.as_text(), request.seed))
        return await super().complete(request, json_schema)


def _expanded(offset: int = 0):
    spec = load_spec(TONE)
    instance = generate_instances(spec, 1, 0)[0]
    backend = RecordingBackend()
    game = make_game(spec, instance, LLM(backend=backend, use_cache=False),
                     config=TONE, sample_offset=offset)
    report = expand_sync(game, progress=False)
    assert not report.failed
    return game, backend


def test_each_chance_path_has_its_own_seed_and_instructions_share_it() -> None:
    game, _ = _expanded()
    by_path: dict[tuple[int, ...], set[int]] = defaultdict(set)
    for history in game.messages:
        path = game.sample_path(history)
        speaker = (game.first_player + len(path) - 1) % game.num_players()
        turns_before = []  # the seed does not read the turns: any will do
        instruction = game.instructions(speaker)[history[-2]]
        seed = game.message_request(turns_before, speaker, instruction, path).seed
        by_path[path].add(seed)
    # the instructions at a node share their seed: one seed per chance path ...
    assert all(len(seeds) == 1 for seeds in by_path.values())
    # ... and no two chance paths share one (S = 2, two messages: 2 + 4 paths)
    assert len(by_path) == 6
    assert len({next(iter(s)) for s in by_path.values()}) == len(by_path)
    # sample k after sample k is no longer sample k's stream
    assert by_path[(0, 0)] != by_path[(0,)] and by_path[(1, 1)] != by_path[(1,)]


def test_the_backend_receives_one_seed_per_path_and_fresh_paths_are_disjoint() -> None:
    game, backend = _expanded()
    fresh, fresh_backend = _expanded(offset=game.spec.num_llm_seeds)
    solved_seeds = {seed for _, seed in backend.seeds}
    fresh_seeds = {seed for _, seed in fresh_backend.seeds}
    assert len(solved_seeds) == 6 and len(fresh_seeds) == 6
    assert not solved_seeds & fresh_seeds
    assert solved_seeds <= message_seeds(game) and fresh_seeds <= message_seeds(fresh)
    # every message request at one path but with other instructions has the same seed, so the
    # requests outnumber the seeds by the instructions per node
    assert len(backend.seeds) > len(solved_seeds)
