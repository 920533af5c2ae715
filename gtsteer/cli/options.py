"""Every command-line option that two or more commands take, declared once.

A command names its parameter with one of these aliases (`seed: Seed = 0`), so a flag is
spelt, typed, bounded and documented the same way wherever it appears; the default stays with
the command (`= 0`, `= "local"`), since that is the command's business. Options that only one
command takes are declared next to it, in the same `Annotated` style.

One flag has more than one alias only where its meaning, type or bounds differ between
commands (`--seed` of a run is bounded to SEED_RANGE and also spelt `-s`; a Werewolf game's
`--seed` is bounded to the web lobby's range and has no `-s`). Changing one of those would
change a command's behaviour, so each variant is kept and named here. tests/cli/test_cli_options.py
walks the app and fails on a shared flag that any other module declares by hand, or whose help
or type matches no alias here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from gtsteer.runs.context import RunContext
from gtsteer.runs.models import Endpoint
from gtsteer.runs.solve import SEED_RANGE
from gtsteer.runs.units import RayOptions
from gtsteer.werewolf.rules import MAX_PLAYERS, MAX_SEED, MIN_PLAYERS, MIN_SEED

# --- the config ------------------------------------------------------------------------------

#: A command's domain config: a YAML path, or the name of a shipped one (`gtsteer configs`).
ConfigArg = Annotated[
    Path,
    typer.Argument(help="Domain config: a YAML path, or a shipped config's name such as"
                   " schedule_meeting_dow (`gtsteer configs` lists them).", show_default=False),
]

# --- the model and where it is served -------------------------------------------------------

#: The model-string grammar (`gtsteer.llm.backends`), as a flag's help says it.
MODELS = "local | local:/x.gguf | fake | litellm id | module:Class (a Backend of yours)"
Llm = Annotated[str, typer.Option("--llm", "-m", help=MODELS)]
#: `--llm` of a command that reads a config's `models:` block (solve, psro, export, steering).
WriterLlm = Annotated[
    str | None,
    typer.Option("--llm", "-m", help=f"Model that writes the messages: {MODELS} (default: the"
                 " config's models.writer, else local)."),
]
#: `werewolf play`: one model per seat, dealt in turn.
SeatLlms = Annotated[
    str,
    typer.Option("--llm", "-m", help="Model for the bots and the router; a comma-separated list"
                 " (e.g. local,openai/gpt-4o-mini) is dealt to the seats in turn."),
]
#: `werewolf serve`: the models the web lobby offers.
LobbyLlms = Annotated[
    str,
    typer.Option("--llm", "-m", help="Models the lobby offers, comma-separated; the first is the"
                 " default (fake is always offered)."),
]
#: `werewolf act`: replaces the model stored with the bot.
BotLlm = Annotated[str | None, typer.Option("--llm", "-m", help="Override the bot's model.")]

ApiBase = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="Base URL of an OpenAI-compatible server for litellm models, e.g."
        " http://127.0.0.1:8080/v1 (llama.cpp server, vLLM; see docs/SERVING.md).",
    ),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Name of the environment variable that holds the server's API key (the key"
        " itself never goes on the command line or into the cache).",
    ),
]
ApiMode = Annotated[
    str | None,
    typer.Option(
        "--api-mode",
        help="How served models are asked: chat (/v1/chat/completions, the default) or"
        " completions (/v1/completions with the plain text prompt, for base models; default:"
        " the config's models.<role>.api_mode, else chat; docs/SERVING.md).",
    ),
]
RequestTimeout = Annotated[
    float | None,
    typer.Option(
        "--request-timeout",
        help="Seconds one request to a served model may take before it is retried (default"
        " 120; docs/SERVING.md).",
        min=0.001,
    ),
]
MaxWait = Annotated[
    float | None,
    typer.Option(
        "--max-wait",
        help="The longest wait in seconds between two tries of a served model's request, a"
        " server's Retry-After included (default 300; the wait is shown in the progress bar).",
        min=0.0,
    ),
]


@dataclass(frozen=True)
class Served:
    """The five flags above, a group: a command's `served: Served = Served()` parameter is
    given as them, in its place (`gtsteer.cli.common.grouped`)."""

    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    request_timeout: RequestTimeout = None
    max_wait: MaxWait = None
    api_mode: ApiMode = None

    def endpoint(self, env_keys: bool = True) -> Endpoint:
        """Where the run's served models live (an unusable variable name or mode is refused
        here)."""
        return Endpoint(self.api_base, self.api_key_env, timeout_s=self.request_timeout,
                        max_wait_s=self.max_wait, env_keys=env_keys, api_mode=self.api_mode)

    def context(self, **given: Any) -> RunContext:
        """The run's context (`RunContext.of`) with this endpoint."""
        return RunContext.of(endpoint=self.endpoint(), **given)


# --- rate and budget (every command that calls a model; `gtsteer.cli.spend`) -------------------

Concurrency = Annotated[
    int | None,
    typer.Option("--concurrency", min=1, help="Most model requests in flight at once, over"
                 " every model of the run, serial or on Ray (default: the backend's, 16 for"
                 " served models)."),
]
Rpm = Annotated[
    int | None,
    typer.Option("--rpm", min=1, help="Most model requests started per minute, evenly spaced,"
                 " serial or on Ray (default: GTSTEER_RPM, else none)."),
]
MaxTokens = Annotated[
    int | None,
    typer.Option("--max-tokens", min=1, help="Stop the run cleanly once its new calls used this"
                 " many tokens (prompt + completion; cache hits are free). Exit 3; a rerun with"
                 " a higher limit continues from the cache."),
]
#: `llm ask`: one request's answer length, not a run's budget.
AnswerTokens = Annotated[int, typer.Option("--max-tokens", help="Most tokens to generate.")]
MaxCost = Annotated[
    float | None,
    typer.Option("--max-cost", min=0.0, help="Stop the run cleanly once its new calls cost this"
                 " many USD (litellm's prices; refused for a model it cannot price). Exit 3; a"
                 " rerun with a higher limit continues from the cache."),
]
DryRunFlag = Annotated[
    bool,
    typer.Option("--dry-run", help="Send nothing: print the requests the run would send (and"
                 " how many the cache already answers), its estimated prompt and completion"
                 " tokens (completions at max_tokens as the bound) and their cost (litellm's"
                 " prices, 'unknown' where it has none). Writes no results. Exit 0."),
]

# --- seeds ------------------------------------------------------------------------------------

Seed = Annotated[
    int,
    typer.Option("--seed", "-s", min=SEED_RANGE[0], max=SEED_RANGE[1],
                 help="Seed of the generated instances and of every other random choice of the"
                 " run."),
]
#: Werewolf games: the web lobby's range (MIN_SEED..MAX_SEED), no `-s`.
GameSeed = Annotated[
    int,
    typer.Option("--seed", min=MIN_SEED, max=MAX_SEED,
                 help="Game seed: roles, orders and sampling (game g of several plays"
                 " SEED+g), and every other random choice of the command."),
]
#: `llm ask`: one request's seed.
SamplingSeed = Annotated[int, typer.Option("--seed", help="Sampling seed (part of the cache key).")]

# --- output and display -------------------------------------------------------------------------

Out = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Output dir (default: a folder under results/ named after"
                 " the run; its path is printed at the end)."),
]
#: The Werewolf runs' folder, a str there.
OutFolder = Annotated[
    str,
    typer.Option("--out", "-o", help="Output folder (its JSON results; steer-train adds policy/"
                 " and logs)."),
]
#: `instances`: one JSONL file.
OutFile = Annotated[Path | None, typer.Option("--out", "-o", help="JSONL file to write.")]
#: `werewolf export`: one JSON snapshot.
SnapshotOut = Annotated[
    str | None, typer.Option("--out", "-o", help="File to write (default: stdout).")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display and no tables:"
                 " only the final summary (where the results are) and the usage line.")]

# --- scale-out (docs/SCALE.md; checked by `Scale.options`) -----------------------------------

Ray = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run the units of work (instances, games) as Ray tasks: `local` starts Ray on this"
        " machine (--workers N), `auto` or HOST:PORT joins a cluster (pip install"
        # help is rich markup, where a bare [ray] is a style tag
        " 'gtsteer\\[ray]'; docs/SCALE.md). Results equal the serial run's.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option("--workers", help="CPUs of the Ray instance `--ray local` starts (default:"
                 " all of this machine's).", min=1),
]


@dataclass(frozen=True)
class Scale:
    """`--ray` and `--workers`, a group as `Served` is."""

    ray: Ray = None
    workers: Workers = None

    def options(self) -> RayOptions | None:
        """The run's Ray settings; None (serial, Ray not imported) without --ray."""
        if self.ray is None:
            if self.workers is not None:
                raise typer.BadParameter("only with --ray local", param_hint="--workers")
            return None
        try:
            options = RayOptions(self.ray.strip(), self.workers)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--ray") from None
        try:
            import ray  # noqa: F401 - the extra is optional: say how to get it, in one line
        except ImportError:
            raise typer.BadParameter("Ray is not installed: pip install 'gtsteer[ray]'",
                                     param_hint="--ray") from None
        return options


# --- instances, games and solving ---------------------------------------------------------------

Games = Annotated[int, typer.Option("--games", "-n", help="Generated instances.")]
#: `--instances` of the commands that play a config's instances (solve, psro).
InstancesFile = Annotated[
    Path | None,
    typer.Option("--instances", help="Play the instances of this JSONL file (from `gtsteer"
                 " instances`; `--seeded` writes a config's own) instead of generated ones;"
                 " not with --games."),
]
#: `eval verdict`: games, not instances.
#: `evaluate`: fresh instances, never in the policy's dataset.
FreshGames = Annotated[
    int, typer.Option("--games", "-n", min=1, help="Fresh instances (never in the policy's"
                      " dataset).")
]
VerdictGames = Annotated[int, typer.Option("--games", "-n", help="Games per policy and judge.")]
#: Werewolf runs: bot-only games (`-n` is `--players` there).
BotGames = Annotated[
    int,
    typer.Option("--games", help="Bot-only games, on seeds SEED, SEED+1, ... (evaluate plays"
                 " each under every condition)."),
]
_DEALS_HELP = ("Deal private info by chance: one game per instance whose root deals 1 of K"
               " draws, so no strategy uses another player's private info (default: the"
               " config's num_deals, usually 1).")
#: Checked by the spec (`DomainSpec.with_deals` names --deals).
Deals = Annotated[int | None, typer.Option("--deals", help=_DEALS_HELP)]
#: `imitate`: the same flag with typer's own bound.
DealsMin1 = Annotated[int | None, typer.Option("--deals", help=_DEALS_HELP, min=1)]
Solver = Annotated[str, typer.Option("--solver", help="cfr | cfr+")]
Iterations = Annotated[int, typer.Option("--iterations", "-k", help="CFR iterations.")]
#: `psro`: outer iterations (`-k` is `--candidates` there).
PsroIterations = Annotated[int, typer.Option("--iterations", "-t", help="PSRO iterations.")]
#: `werewolf steer-train`: per playstyle game.
PlaystyleIterations = Annotated[
    int, typer.Option("--iterations", help="CFR+ iterations per state.")
]
MaxCalls = Annotated[
    int | None,
    typer.Option("--max-calls", help="Stop the run cleanly after this many new model calls"
                 " (cache hits are free; exit 3, a rerun with a higher limit continues). Unset,"
                 " a run whose game trees need more than 1,000,000 requests, worst case, is"
                 " refused before any call (the estimate is printed first).", min=1),
]
#: `solve`: the held-out gain.
HeldoutGain = Annotated[
    bool,
    typer.Option(
        "--heldout",
        help="Also measure CFR gain on fresh LLM samples of the solved positions (samples"
        " CFR never chose from; costs part of a second tree per instance).",
    ),
]
#: `psro`: re-scoring what it adopts.
HeldoutRescore = Annotated[
    bool,
    typer.Option("--heldout", help="Re-score each adopted instruction on fresh LLM samples."),
]
#: `eval steering`: messages to classify (steering K; not S, the samples per message of a
#: game's chance nodes, which `werewolf steer-train --samples` and configs' `num_llm_seeds` set).
SteeringSamples = Annotated[
    int | None, typer.Option("--steering-samples", "-k",
                             help="Messages per instruction value (default 10).")
]
#: `eval steering`: the old spelling of --steering-samples, kept so old command lines run.
DeprecatedSteeringSamples = Annotated[
    int | None, typer.Option("--samples", hidden=True,
                             help="Deprecated: --steering-samples.")
]
#: `evaluate`: dialogues per condition and instance.
LiveSamples = Annotated[
    int, typer.Option("--samples", min=1, help="Dialogues per condition and instance (sample"
                      " offsets 0..K-1, the same in every condition).")
]
#: `werewolf steer-train`: chance samples of the playstyle games.
MessageSamples = Annotated[
    int, typer.Option("--samples", help="num_llm_seeds: samples of each message.")
]
#: `eval judge`: the judges it validates, several.
Judges = Annotated[
    list[str],
    typer.Option("--judge", "-j", help="A judge: a model (calibrated likelihoods), "
                 "pairwise:MODEL, embed[:EMBEDDER] or parse; repeat for several."),
]
#: `eval judge`: its labelled messages.
LabelledMessages = Annotated[
    Path, typer.Option("--labelled", "-l", help="Labelled messages (YAML).")
]
#: `eval reward`: hand-labelled dialogues, scored instead of templated cases.
LabelledDialogues = Annotated[
    Path | None,
    typer.Option("--labelled", "-l", help="Score hand-labelled dialogues (YAML: names,"
                 " transcript, agreed) by each reading of what was agreed, instead of templated"
                 " cases; writes DIR/reward_labelled.json.")
]
Embedder = Annotated[
    str | None,
    typer.Option("--embedder", help="Sentence embedder: all-MiniLM-L6-v2 (default, shipped"
                 " offline), a hub name or a local sentence-transformers folder."),
]

# --- Werewolf -------------------------------------------------------------------------------------

Db = Annotated[
    str | None,
    typer.Option("--db", help="SQLite file (default: <GTSTEER_CACHE_DIR or"
                 " ~/.cache/gtsteer>/werewolf.sqlite)."),
]
Players = Annotated[
    int, typer.Option("--players", "-n", help=f"Players per game ({MIN_PLAYERS}..{MAX_PLAYERS}).")
]
MaxMessages = Annotated[
    int | None,
    typer.Option("--max-messages", help="Discussion turns per day (unset: ceil((living + 1) x"
                 " 3.5), as the reference)."),
]
MaxDays = Annotated[
    int | None,
    typer.Option("--max-days", help="Day cap: a game still running after that many days ends"
                 " with winner none (unset: no cap)."),
]
_steer = typer.Option("--steer", help="A `steer-train` output folder: its distilled policy picks"
                      " the bots' playstyles at discussion turns (the decisions it was solved"
                      " for).")
Steer = Annotated[str | None, _steer]
#: `werewolf steer-train`: the roots of its playstyle games.
PlaystyleStates = Annotated[
    int, typer.Option("--states", help="Logged states to solve as playstyle games.")
]
#: `werewolf steer-train`: the players of a playstyle game.
PlaystyleSpeakers = Annotated[
    int, typer.Option("--speakers", help="Next speakers per game (2..4).")
]
PlaystyleOptions = Annotated[
    str, typer.Option("--styles",
                      help="Comma-separated discussion options (playstyles, unsteered).")
]
SteerTeam = Annotated[
    str, typer.Option("--steer-team", help="Which bots are steered: village, werewolves or both.")
]

# --- distilled policies ---------------------------------------------------------------------

#: `evaluate`: a `gtsteer imitate` model folder.
ImitatedPolicy = Annotated[
    Path, typer.Option("--policy", help="A distilled policy's folder (`gtsteer imitate`'s"
                       " DIR/model).")
]

# --- resuming a stopped run ----------------------------------------------------------------

#: `solve`: instance records (`games/<i>.json`) carry the run's key.
InstancesResume = Annotated[
    bool,
    typer.Option("--resume", help="Keep the instances an earlier run with the same settings"
                 " solved in --out (their games/<i>.json) and solve only the rest."),
]
#: `evaluate`: each fresh instance's row (`instances/<i>.json`) carries the run's key.
LiveResume = Annotated[
    bool,
    typer.Option("--resume", help="Keep the instances an earlier run with the same settings"
                 " and policy played in --out (their instances/<i>.json) and play only the"
                 " rest."),
]
#: `werewolf evaluate`: each finished seed is saved (`seeds/<g>.json.gz`) with the run's key.
SeedsResume = Annotated[
    bool,
    typer.Option("--resume", help="Keep the seeds an earlier run with the same settings and"
                 " policy finished in --out (seeds/<g>.json.gz) and play only the rest."),
]

# --- overrides of config fields (cli/overrides.py) ----------------------------------------

Overrides = Annotated[
    list[str] | None,
    typer.Argument(help="Config fields to change for this run, as key=value (the value read"
                   " as YAML): num_max_replies=2 generation.temperature=0.5"
                   " actions.day=[Monday,any].", show_default=False),
]
ShowConfig = Annotated[
    bool, typer.Option("--show-config", help="Print the resolved config (the YAML with the"
                       " overrides applied, validated) and exit.")]
