"""Any finite turn-based pyspiel game as a Gambit `.efg` file, and policies across the two.

The text is Gambit's extensive-form format (`EFG 2 R`) in the subset OpenSpiel's `efg_game`
parses (open_spiel/games/efg_game/efg_game.cc); docs/SOLVE.md ("Taking a game away") says
what each line holds. Numbering follows Gambit's rules so Gambit reads the same game: each
chance node has its own information set and each terminal its own outcome (nodes that shared
one would have to share probabilities or payoffs).

OpenSpiel gives an action label one id per game (first appearance in the file) and sorts each
node's ids, so a game whose every node lists its labels in first-appearance order (a dialogue
game: every player has the same instruction list) is loaded with the same action order, and
solvers run on the loaded game do the same arithmetic as on the original.

`EfgMap` is the side file, so a policy of either game maps onto the other. This module only
computes; `gtsteer.runs.export` writes the files. OpenSpiel's own
`open_spiel/game_transforms/efg_writer.cc` labels no information set, so nothing would tie its
file back to the source game's information states.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pyspiel
from pydantic import BaseModel, Field

from gtsteer.solvers.cfr import PolicyTable, cached_tree, decision_states
from gtsteer.solvers.gambit_text import label, number, probability, unquoted

#: Side-file schema version (`EfgMap.schema_version`).
EFG_MAP_VERSION = 1


class EfgAction(BaseModel):
    """One action of an information set: its label in the file, its id and name
    (`action_to_string`, before quotes and whitespace were replaced) in the source game."""

    label: str
    action: int
    name: str


class EfgInfoset(BaseModel):
    """One player information set of the file and the source information state it is."""

    player: int  # 0-based, as pyspiel (the file's player number is player + 1)
    number: int  # 1-based within the player, as in the file
    label: str
    #: OpenSpiel's `efg_game` information-state string of this set ("p-p-number-label").
    efg_info_state: str
    #: The source game's `information_state_string()`.
    info_state: str
    actions: list[EfgAction]
    #: The player's own previous (information-set number, action index), None at its first
    #: decision: the sequence structure, from which `reduced_strategies` counts.
    parent: tuple[int, int] | None = None
    #: Decision nodes of the tree in this set.
    nodes: int = 0


class EfgMap(BaseModel):
    """The side file of an `.efg`: what each information set of the file is in the source."""

    schema_version: int = EFG_MAP_VERSION
    title: str
    players: list[str]
    infosets: list[EfgInfoset]
    chance_nodes: int
    decision_nodes: int
    terminals: int
    #: Reduced pure strategies per player (what Gambit's strategic form enumerates), as text:
    #: the counts outgrow any float.
    reduced_strategies: list[str] = Field(default_factory=list)

    def by_info_state(self) -> dict[str, EfgInfoset]:
        return {s.info_state: s for s in self.infosets}

    def by_efg_info_state(self) -> dict[str, EfgInfoset]:
        return {s.efg_info_state: s for s in self.infosets}


class EfgExport(BaseModel):
    """The `.efg` text and its side file."""

    text: str
    map: EfgMap


def efg_info_state(player: int, number_: int, label_text: str) -> str:
    """OpenSpiel's efg_game information-state string (`EFGInformationStateString`): owner,
    observer, number and label joined by `-`; the owner observes its own decisions."""
    return f"{player}-{player}-{number_}-{label_text}"


def to_efg(
    game: pyspiel.Game,
    *,
    title: str = "",
    player_names: Sequence[str] | None = None,
    description: str = "",
) -> EfgExport:
    """The whole tree of `game` (walked on its cached tree) as `.efg` text and side file.

    Information sets are labelled `<player name> <number>`; actions by `action_to_string`.
    Raises ValueError for a simultaneous-move node, two actions of one node with the same
    label, or a label that is not the same wherever its information set appears."""
    tree = cached_tree(game)
    n = game.num_players()
    names = list(player_names) if player_names is not None else [f"Player {p + 1}"
                                                                  for p in range(n)]
    if len(names) != n:
        raise ValueError(f"player_names: {n} players, got {len(names)} names")
    writer = _Writer(names)
    head = f"EFG 2 R {label(title or str(game))} {{ {' '.join(label(x) for x in names)} }}"
    if description:
        head += f" {label(description)}"
    writer.lines.append(head)
    writer.lines.append("")
    writer.walk(tree.new_initial_state(), [None] * n, 0)
    infosets = sorted(writer.infosets.values(), key=lambda s: (s.player, s.number))
    efg_map = EfgMap(
        title=unquoted(label(title or str(game))),
        players=[unquoted(label(x)) for x in names],
        infosets=infosets,
        chance_nodes=writer.chance,
        decision_nodes=sum(s.nodes for s in infosets),
        terminals=writer.terminals,
    )
    efg_map.reduced_strategies = [str(c) for c in reduced_strategies(efg_map)]
    return EfgExport(text="\n".join(writer.lines) + "\n", map=efg_map)


class _Writer:
    """The preorder walk: lines, information sets by source string, node counters."""

    def __init__(self, names: Sequence[str]):
        self.names = list(names)
        self.lines: list[str] = []
        self.infosets: dict[tuple[int, str], EfgInfoset] = {}
        self.per_player = [0] * len(names)
        self.chance = 0
        self.terminals = 0

    def walk(self, state: pyspiel.State, last: list[tuple[int, int] | None], depth: int) -> None:
        pad = "  " * depth  # spaces: OpenSpiel's parser does not skip tabs
        if state.is_terminal():
            self.terminals += 1
            payoffs = " ".join(number(r) for r in state.returns())
            self.lines.append(f'{pad}t "" {self.terminals} "" {{ {payoffs} }}')
            return
        if state.is_chance_node():
            self.chance += 1
            outcomes = state.chance_outcomes()
            labels = _unique([label(state.action_to_string(a)) for a, _ in outcomes], state)
            body = " ".join(f"{lab} {probability(p)}"
                            for lab, (_, p) in zip(labels, outcomes, strict=True))
            self.lines.append(f'{pad}c "" {self.chance} "" {{ {body} }} 0')
            for a, _ in outcomes:
                self.walk(state.child(a), last, depth + 1)
            return
        if state.is_simultaneous_node():
            raise ValueError("efg: simultaneous-move nodes have no .efg form; make the game"
                             " turn-based first")
        player = state.current_player()
        legal = state.legal_actions()
        names = [state.action_to_string(player, a) for a in legal]
        labels = _unique([label(x) for x in names], state)
        infoset = self._infoset(state, player, legal, names, labels, last[player])
        infoset.nodes += 1
        self.lines.append(f'{pad}p "" {player + 1} {infoset.number} {label(infoset.label)}'
                          f' {{ {" ".join(labels)} }} 0')
        for i, a in enumerate(legal):
            mine = list(last)
            mine[player] = (infoset.number, i)
            self.walk(state.child(a), mine, depth + 1)

    def _infoset(self, state: pyspiel.State, player: int, legal: list[int], names: list[str],
                 labels: list[str], parent: tuple[int, int] | None) -> EfgInfoset:
        key = (player, state.information_state_string())
        found = self.infosets.get(key)
        actions = [EfgAction(label=unquoted(x), action=int(a), name=name)
                   for x, a, name in zip(labels, legal, names, strict=True)]
        if found is None:
            self.per_player[player] += 1
            k = self.per_player[player]
            text = unquoted(label(f"{self.names[player]} {k}"))
            found = EfgInfoset(player=player, number=k, label=text,
                               efg_info_state=efg_info_state(player, k, text),
                               info_state=key[1], actions=actions, parent=parent)
            self.infosets[key] = found
        elif found.actions != actions or found.parent != parent:
            raise ValueError(f"efg: information set {found.label!r} of player {player} has"
                             " other actions or another own history at another node (the game"
                             " is not of perfect recall)")
        return found


def _unique(labels: list[str], state: pyspiel.State) -> list[str]:
    if len(set(labels)) != len(labels):
        raise ValueError(f"efg: two actions share a label at a node ({', '.join(labels)});"
                         f" the .efg could not tell them apart: {str(state)[:200]!r}")
    return labels


def reduced_strategies(efg_map: EfgMap) -> list[int]:
    """Per player, the reduced pure strategies of the tree (Gambit's strategic form): an
    information set with actions a counts sum_a prod(counts of the sets that follow a), a
    player multiplies the counts of its first decisions."""
    children: dict[tuple[int, int, int], list[EfgInfoset]] = {}
    roots: dict[int, list[EfgInfoset]] = {p: [] for p in range(len(efg_map.players))}
    for s in efg_map.infosets:
        if s.parent is None:
            roots[s.player].append(s)
        else:
            children.setdefault((s.player, *s.parent), []).append(s)
    memo: dict[tuple[int, int], int] = {}

    def count(s: EfgInfoset) -> int:
        key = (s.player, s.number)
        if key not in memo:
            memo[key] = sum(math.prod(count(c) for c in children.get((s.player, s.number, i), []))
                            for i in range(len(s.actions)))
        return memo[key]

    # deep trees: count children before parents (numbers grow along every path)
    for s in sorted(efg_map.infosets, key=lambda s: -s.number):
        count(s)
    return [math.prod(count(s) for s in roots[p]) for p in range(len(efg_map.players))]


def policy_to_efg(efg_game: pyspiel.Game, efg_map: EfgMap, table: PolicyTable) -> PolicyTable:
    """A policy of the source game (its information states and action ids) as a policy of
    the loaded `efg_game`, through the side file's labels. Every information set of the file
    must be in `table` (KeyError names the first missing one)."""
    by_efg = efg_map.by_efg_info_state()
    out: PolicyTable = {}
    for state in decision_states(efg_game):
        key = state.information_state_string()
        infoset = by_efg[key]
        if infoset.info_state not in table:
            raise KeyError(f"policy: no entry for {infoset.label!r} (information state"
                           f" {infoset.info_state[:120]!r})")
        probs = dict(table[infoset.info_state])
        source = {a.label: a.action for a in infoset.actions}
        out[key] = [(int(a), float(probs.get(source[state.action_to_string(a)], 0.0)))
                    for a in state.legal_actions()]
    return out


def policy_from_efg(efg_game: pyspiel.Game, efg_map: EfgMap,
                    table: Mapping[str, Sequence[tuple[int, float]]]) -> PolicyTable:
    """A policy of the loaded `efg_game` (keyed by its information-state strings) as a policy
    of the source game, through the side file."""
    by_efg = efg_map.by_efg_info_state()
    labels = _efg_action_labels(efg_game)
    out: PolicyTable = {}
    for key, probs in table.items():
        infoset = by_efg[key]
        source = {a.label: a.action for a in infoset.actions}
        out[infoset.info_state] = [(source[labels[key][int(a)]], float(p)) for a, p in probs]
    return out


def _efg_action_labels(efg_game: pyspiel.Game) -> dict[str, dict[int, str]]:
    """Per information state of a loaded efg game, its actions' ids -> labels. Read per
    information set, not per game: where decisions offer different action sets (per-turn
    instructions), one id does not name one label across the whole game."""
    return {state.information_state_string(): {int(a): state.action_to_string(a)
                                               for a in state.legal_actions()}
            for state in decision_states(efg_game)}
