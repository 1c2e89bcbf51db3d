"""``tritongate calibrate``: how far this runner's verdicts can be trusted, measured on it.

A/A paired runs (the build against itself, every row timed) count false verdicts; paired runs
against the same build with a planted delay of a known fraction of each row's time (1 %, 2 %,
5 %) count what the gate catches. ``run`` drives ``steps`` (the pairs), ``aim`` (each row's spin
per size, timed by ``aim_worker``, sized by paired runs in ``aim_check`` where one process cannot),
``analysis``, ``report`` and ``resume``; ``thresholds`` derives per-op minimum effects.
"""
