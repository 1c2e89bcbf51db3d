"""Nightly history: per-row series of the baseline store's record runs, and their change points.

``series`` reads the store's entries for one runner class and suite into per-row series,
``changepoints`` finds and confirms level shifts in them, ``plot`` draws one PNG per op,
``report`` writes ``history.json`` and ``history.md``, and ``commands`` is the
``tritongate history`` sub-command.
"""
