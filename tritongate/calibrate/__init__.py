"""``tritongate calibrate``: how far this runner's verdicts can be trusted, measured on it.

A/A paired runs (the build against itself, every row timed) count false verdicts; paired runs
against the same build with a planted delay of a known fraction of each row's time (1 %, 2 %,
5 %) count what the gate catches. ``model`` holds the result, ``steps`` runs the pairs,
``analysis`` turns them into per-row and per-size-class figures, ``report`` writes the table
and the plot, ``thresholds`` derives per-op minimum effects, ``commands`` is the CLI.
"""
