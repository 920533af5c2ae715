"""Drivers: read a config, call the algorithms, write result files and plots.

Algorithms (`gtsteer.solvers`, `gtsteer.imitation`) never write files; the runs here do. One
module per command: `solve` (`gtsteer solve`), and later `psro`, `imitate`, `eval_*`.
Shared run-folder, JSON and PNG handling lives in `gtsteer.runs.output`.
"""
