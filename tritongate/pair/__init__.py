"""The paired PR check: base and candidate compiler builds measured in one job, on one GPU,
in alternating rounds, each build in its own worker process.

``orchestrator`` (the parent: never imports torch or triton) drives two ``worker``
processes over ``protocol``; each worker runs an ``executor`` (the real one measures
Triton kernels; tests script their own). The parent's parts: ``request`` (what a run is
asked, its defaults), ``spawn`` and ``pool`` (starting and keeping the workers), ``measure``
(one row's pairs), ``rows`` (the records they make), ``rundirs`` (each side's run
directory). ``schedule`` plans how many paired rounds a row gets; ``build`` says what a
compiler build is (an interpreter plus environment overlays).
"""
