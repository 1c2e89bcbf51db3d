"""The pass blame of a verdict (verdict.json's ``ir.blame``) in words, for the comment and the terminal.

One line per changed kernel and outcome: "`matmul_kernel` first differs after
`tritongpu-accelerate-matmul`", "`add_kernel`: pipeline changed: `tritongpu-coalesce` removed",
"differs below the pass dumps (PTX)", "not blamed: <why>". Pure: a line is a list of pieces
``(text, code)``, raw; each renderer escapes every piece (pass and kernel names come from a
PR's compiler output) and shows code pieces as code.
"""

from __future__ import annotations

from tritongate.model.verdict import BlameLineDoc, IRBlameDoc
from tritongate.report.untrusted import markdown_cell, neutralize

Piece = tuple[str, bool]  # (raw text, shown as code)

LEVEL_NAMES = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLVM IR", "ptx": "PTX", "cubin": "cubin: ptxas"}
TITLE = "Pass blame: the first compiler pass whose output differs, per changed kernel"
MARKDOWN_LINES = 12  # kernel lines listed in the comment (verdict.json keeps up to 100, counts the rest)
TERMINAL_LINES = 5


def short_kernel(kernel: str) -> str:
    """``tritongate.ops.kernels.matmul.matmul_kernel`` -> ``matmul_kernel`` (verdict.json keeps the whole name)."""
    return kernel.rsplit(".", 1)[-1] or kernel


def line_pieces(line: BlameLineDoc) -> list[Piece]:
    out: list[Piece] = [(short_kernel(line.kernel), True)]
    if line.variants > 1:
        out.append((f" ({line.variants} variants)", False))
    if line.outcome == "pass":
        out += [(" first differs after ", False), (line.pass_name or "?", True)]
        if line.stage:
            out.append((f" ({line.stage})", False))
    elif line.outcome == "pipeline":
        out += [(": pipeline changed: ", False), (line.pass_name or "?", True),
                (f" {line.change or 'changed'}" + (f" ({line.stage})" if line.stage else ""), False)]
        if line.next_pass:
            level = LEVEL_NAMES.get(line.next_pass)
            name, at, stage = line.next_pass.rpartition("@")
            out += ([(f"; the {level} output differs", False)] if level
                    else [("; then ", False), (name if at else stage, True),
                          ((f" ({stage})" if at else "") + " is the first pass whose output differs", False)])
    elif line.outcome == "input":
        out.append((" differs before any pass: the frontend's TTIR, the pipeline's input", False))
    elif line.outcome == "below":
        level = LEVEL_NAMES.get(line.level or "", line.level or "a final output")
        out.append((f" differs below the pass dumps ({level})", False))
    elif line.outcome == "none":
        out.append((": no pass output or final output differs in the compiles with dumps", False))
    else:
        out += [(" not blamed: ", False), (line.why or "no reason given", False)]
    return out


def blame_lines(blame: IRBlameDoc, shown: int) -> tuple[str, list[list[Piece]], int]:
    """(title or note, the first ``shown`` lines, how many more there are)."""
    if blame.note:
        return blame.note, [], 0
    lines = [line_pieces(x) for x in blame.kernels[:shown]]
    return TITLE, lines, max(0, len(blame.kernels) - shown) + blame.more


def _md(text: str, code: bool) -> str:
    if code:
        return f"<code>{markdown_cell(text)}</code>"
    if not text.strip():  # markdown_cell trims: keep the spaces between pieces
        return " " if text else ""
    return (" " if text[0].isspace() else "") + markdown_cell(text) + (" " if text[-1].isspace() else "")


def markdown_block(blame: IRBlameDoc | None, shown: int = MARKDOWN_LINES) -> list[str]:
    """The comment's lines for the blame ([] without one): a title and a list, or a note."""
    if blame is None:
        return []
    title, lines, more = blame_lines(blame, shown)
    if blame.note:
        return [f"**Note:** {_md(title[:1].upper() + title[1:], False)}"]
    if not lines and not more:
        return [f"**{TITLE}** ({_md(blame.file, True)}): no changed kernel."]
    out = [f"**{TITLE}** ({_md(blame.file, True)}):", ""]
    out += ["- " + "".join(_md(t, code) for t, code in pieces) for pieces in lines]
    if more:
        out.append(f"- _… and {more} more; {_md(blame.file, True)} has every blamed variant._")
    return out


def terminal_block(blame: IRBlameDoc | None, shown: int = TERMINAL_LINES) -> list[str]:
    """The terminal's lines for the blame ([] without one), every piece neutralized."""
    if blame is None:
        return []
    title, lines, more = blame_lines(blame, shown)
    if blame.note:
        return [f"note: {neutralize(title)}"]
    out = [f"  {'PASS BLAME':<17} " + "".join(f"`{neutralize(t)}`" if code else
                                             (" " if t[:1].isspace() else "") + neutralize(t)
                                             + (" " if t[-1:].isspace() else "") for t, code in pieces)
           for pieces in lines]
    if more:
        out.append(f"  … {more} more blame lines in verdict.md ({neutralize(blame.file)})")
    return out
