"""A worker process: one compiler build, driven by the parent over ``protocol``.

    python -m tritongate.pair.worker [--executor module:Class]

Started by the orchestrator with the build's interpreter and environment. The executor
class is imported only on ``init``, so a build whose interpreter lacks a dependency answers
with a named error instead of dying silently.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Any, BinaryIO

from tritongate.pair.protocol import COMMANDS, decode, encode

DEFAULT_EXECUTOR = "tritongate.pair.executor:TritonExecutor"


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr or "Executor")


def _classify(exc: BaseException) -> dict[str, Any]:
    """The error answer: what kind of failure, in one line the parent can show."""
    from tritongate.errors import PreflightError, UsageError
    from tritongate.harness.cuda_errors import fatal_cuda_error
    from tritongate.harness.shared_inputs import SharingError
    from tritongate.rowcase import describe

    if isinstance(exc, PreflightError):
        return {"kind": "preflight", "check": exc.check, "error": str(exc)}
    if isinstance(exc, SharingError):  # the row failed on sharing its inputs: the parent times it again on own ones
        return {"kind": "row", "check": "shared_inputs", "error": describe(exc, 1000)}
    if isinstance(exc, ImportError):
        return {"kind": "usage", "error": f"{sys.executable} cannot import {exc.name or '?'} ({exc}); install "
                                          "torch, triton, numpy and pyyaml into this compiler build's environment"}
    if fatal_cuda_error(str(exc)) is not None:
        return {"kind": "fatal", "error": describe(exc, 1000)}  # the device context is gone
    if isinstance(exc, UsageError):
        return {"kind": "usage", "error": str(exc)}
    return {"kind": "row", "error": describe(exc, 1000)}


def serve(requests: BinaryIO, answers: BinaryIO, executor_spec: str) -> int:
    executor: Any = None
    try:
        for line in requests:
            if not line.strip():
                continue
            message = decode(line)
            seq, cmd, args = message["seq"], message.get("cmd"), message.get("args") or {}
            try:
                if cmd == "init":
                    executor = _load(executor_spec)(args.get("settings") or {})
                    result = executor.hello()
                elif cmd == "shutdown":
                    answers.write(encode({"seq": seq, "ok": True, "result": {}}))
                    answers.flush()
                    return 0
                elif cmd not in COMMANDS:  # only the protocol's commands, never any other attribute
                    raise RuntimeError(f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})")
                elif executor is None:
                    raise RuntimeError(f"{cmd!r} before init")
                else:
                    result = getattr(executor, str(cmd))(**args)
                line_out = encode({"seq": seq, "ok": True, "result": result})
            except Exception as exc:  # noqa: BLE001 - every failure (an unencodable result too) is an answer
                traceback.print_exc(file=sys.stderr)
                answer = {"seq": seq, "ok": False, **_classify(exc)}
                if cmd == "init":
                    answer["kind"] = answer["kind"] if answer["kind"] in ("preflight", "usage") else "usage"
                line_out = encode(answer)
            answers.write(line_out)
            answers.flush()
        return 0  # stdin closed: the parent is gone
    finally:
        if executor is not None and hasattr(executor, "close"):
            try:
                executor.close()
            except Exception:  # noqa: BLE001 - exiting anyway
                traceback.print_exc(file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritongate.pair.worker",
                                     description="A paired-run worker (started by `tritongate pair`).")
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR, metavar="MODULE:CLASS")
    args = parser.parse_args(argv)
    # Answers go to the original stdout; fd 1 becomes stderr so stray prints reach the log.
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    return serve(sys.stdin.buffer, answers, args.executor)


if __name__ == "__main__":
    sys.exit(main())
