"""`gtsteer instances CONFIG`: LLM-written instances, validated against the spec, as JSONL; or,
with `--seeded`, the config's own seeded instances (the ones `gtsteer solve` generates)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gtsteer.binding import generate_instances
from gtsteer.binding.llm_instances import generate_llm_instances, instances_jsonl
from gtsteer.binding.prompts import render_private_info
from gtsteer.cli.common import console, friendly_errors
from gtsteer.cli.options import ConfigArg, Llm, OutFile, Seed, Served
from gtsteer.cli.overrides import overridable
from gtsteer.cli.spend import spending
from gtsteer.domains import load_spec
from gtsteer.runs.output import check_out_file, write_text


@overridable
@spending(budget=True)
def instances(
    config: ConfigArg,
    num: Annotated[int, typer.Option("--num", "-n", help="Instances to write.")] = 5,
    llm: Llm = "local",
    served: Served = Served(),
    seed: Seed = 0,
    out: OutFile = None,
    seeded: Annotated[
        bool, typer.Option("--seeded", help="Write the config's seeded instances 0..NUM-1 (those"
                           " `gtsteer solve --games NUM --seed S` solves; no model), so another"
                           " config of the same domain can play the very same.")
    ] = False,
) -> None:
    """Have the model write NUM new instances from the config's examples (cached, seeded)."""
    with friendly_errors():
        if out is not None:
            check_out_file(out)  # before the model writes anything
        spec = load_spec(config)
        if seeded:
            made = generate_instances(spec, num, seed)
        else:
            endpoint = served.endpoint()
            endpoint.check(llm)
            made = generate_llm_instances(spec, endpoint.llm(llm), num, seed)
    source = "seeded" if seeded else llm
    table = Table("#", "names", "private information", title=f"{spec.name}: {source}, seed {seed}")
    for inst in made:
        private = "\n".join(render_private_info(info) for info in inst.private_info)
        table.add_row(str(inst.index), ", ".join(inst.names), private)
    console.print(table)
    if out is not None:
        with friendly_errors():
            console.print(f"instances: {write_text(out, instances_jsonl(made))}")
