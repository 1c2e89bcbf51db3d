"""Library code never prints, exits or writes the job summary: the command line does
(``tritongate/cli/``), and so may an entry point (a ``__main__`` module, or the
``if __name__ == "__main__":`` block of a worker process's module)."""

from __future__ import annotations

import ast
from pathlib import Path

import tritongate

PACKAGE = Path(tritongate.__file__).parent
# processes of their own (``python -m ...``), whose exit status and stderr are what they report
WORKER_PROCESSES = {"pair/worker.py", "batch/worker.py"}
# names the runner's files only to take them away from a compiler build's processes
REMOVES_RUNNER_FILES = {"childenv.py"}


def _entry_block(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def offences() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli" or path.name == "__main__.py" or rel.as_posix() in WORKER_PROCESSES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n) for block in ast.walk(tree) if _entry_block(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "exit"):
                found.append(f"{rel}:{node.lineno} {node.func.id}()")
            elif isinstance(node, ast.Attribute) and node.attr in ("exit", "_exit") and \
                    isinstance(node.value, ast.Name) and node.value.id in ("sys", "os"):
                found.append(f"{rel}:{node.lineno} {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Constant) and node.value == "GITHUB_STEP_SUMMARY" and \
                    rel.as_posix() not in REMOVES_RUNNER_FILES:
                found.append(f"{rel}:{node.lineno} GITHUB_STEP_SUMMARY")
    return found


def test_only_the_command_line_prints_exits_or_writes_the_job_summary() -> None:
    assert offences() == []
