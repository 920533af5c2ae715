"""Drivers: read a config, call the algorithms, write result files and plots.

Algorithms (`gtsteer.solvers`, `gtsteer.imitation`) and measurements (`gtsteer.evals`) never
write files; the runs here do. One module per command, each `run(config, ctx, options)`
registered by `@driver` (`context.DRIVERS` lists them all). Shared run-folder, JSON and PNG
handling lives in `output` (atomic writes in `atomic`). A driver gets a `RunContext`
(`context`: models by role, endpoint, output folder, executor) and runs its units of work
through the context's `Executor` (`executor`: serially, or as Ray tasks via `ray_pool`), so
the serial and the Ray run are one code path.
"""
