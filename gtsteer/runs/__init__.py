"""Drivers: read a config, call the algorithms, write result files and plots.

Algorithms (`gtsteer.solvers`, `gtsteer.imitation`) never write files; the runs here do. One
module per command: `solve` (`gtsteer solve`, its file schema in `solve_schema`), `psro`,
`imitate`, `eval_steering` / `eval_judge` / `eval_reward` / `eval_verdict` (`gtsteer eval ...`;
the measurements of the first two live in `gtsteer.evals`), and
`werewolf_steer` / `werewolf_evaluate` (`gtsteer werewolf steer-train` / `evaluate`; their
games as units of work in `werewolf_games`).
Shared run-folder, JSON and PNG handling lives in `gtsteer.runs.output` (atomic writes in
`atomic`). A driver gets a `RunContext` (`context`: models by role, endpoint, output folder,
executor) and runs its units of work through the context's `Executor` (`executor`: serially,
or as Ray tasks via `ray_pool`), so the serial and the Ray run are one code path.
"""
