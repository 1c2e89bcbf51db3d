"""Nightly history: per-row series of the baseline store's record runs, and their change points.

``series`` reads the store's entries (``entries``) into per-row series of ``points``, ``changepoints``
finds and confirms level shifts in them, ``report`` writes ``history.json`` and ``history.md``, ``plot``
one PNG per op (the ``tritongate history`` command is in ``cli.baseline``).
"""
