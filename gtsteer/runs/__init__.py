"""Drivers: read a config, call the algorithms, write result files and plots.

Algorithms (`gtsteer.solvers`, `gtsteer.imitation`) and measurements (`gtsteer.evals`) never
write files; the runs here do. One module per command, each `run(config, ctx, options)`
registered by `@driver` (`context.DRIVERS`), its units of work handed to the context's
`Executor` (serially, or as Ray tasks via `ray_pool`): the serial and the Ray run are one path.
"""
