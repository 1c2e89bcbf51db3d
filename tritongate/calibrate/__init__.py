"""``tritongate calibrate``: how far this runner's verdicts can be trusted, measured on it.

A/A paired runs (the build against itself, every row timed) count false verdicts; paired runs
against the same build with a planted delay of a known fraction of each row's time (1 %, 2 %,
5 %) count what the gate catches. ``model`` holds the result, ``steps`` runs the pairs, ``aim``
finds each row's spin per size by timing it (``aim_worker`` runs those timings,
``aim_check`` measures by paired runs the sizes one process cannot pin down), ``analysis``
turns the steps into per-row and per-size-class figures, ``report`` writes the table and the
plot, ``thresholds`` derives per-op minimum effects, ``resume`` reads finished steps back,
``commands`` is the CLI.
"""
