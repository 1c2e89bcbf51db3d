"""File names for the TTGIR of launched variants: ``ttgir/<case>/<kernel>/<variant>.ttgir``.

A stem names what tells a variant apart within its (case, kernel) group: the differing
constexprs as ``<abbr><value>``, then the compile options (``w4s3``). Stems that still collide
(compared case-insensitively) get ``__<dtype>``, then ``__<abbr>div<N>`` where
``tt.divisibility`` differs, then a digest of the parameters (build-independent, unlike the
compile hash), then the compile hash. Names do not depend on the order of the variants or
of their mappings. ``legend`` writes ``naming.md``, which spells the rules out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from tritongate.atomicio import jsonable
from tritongate.ir.index import CompiledVariant
from tritongate.report.untrusted import markdown_cell

MAX_STEM = 150  # well under the 255 bytes file systems allow, with room for ".ttgir"
_HASH_CHARS = 8
_OPTION_LETTERS = (("num_warps", "w"), ("num_stages", "s"), ("num_ctas", "c"), ("maxnreg", "r"))

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]+")  # parameter spellings: identifiers, ASCII only
_NOT_VALUE = re.compile(r"[^A-Za-z0-9.-]+")  # values, dtypes, hashes
_NOT_KERNEL = re.compile(r"[^A-Za-z0-9._-]+")
_NOT_CASE = re.compile(r"[^A-Za-z0-9._x=-]+")


def abbreviate(name: str) -> str:
    """``BLOCK_SIZE_M`` -> ``BSM``, ``stride_am`` -> ``sa``; one word stays whole."""
    words = [w for w in name.split("_") if w]
    return "".join(w[0] for w in words) if len(words) > 1 else name


def abbreviations(param_names: Iterable[str]) -> dict[str, str]:
    """Each parameter name of one kernel -> its file-safe spelling. Names that would share an
    abbreviation keep their full names; one ambiguous even so (non-ASCII) gets a digest."""
    names = sorted(set(param_names))
    short = {n: _safe_name(abbreviate(n)) for n in names}
    clashing = [n for n in names if _shared(short, n)]
    full = {n: _safe_name(n) for n in clashing}
    for n in clashing:
        short[n] = full[n] if not _shared(full, n) else f"{full[n]}-{_digest(n, 6)}"
    return short


def _shared(spelled: Mapping[str, str], name: str) -> bool:
    return list(spelled.values()).count(spelled[name]) > 1


def _safe_name(name: str) -> str:
    return _NOT_NAME.sub("-", name)


def _param_names(variants: Iterable[CompiledVariant]) -> list[str]:
    return sorted({n for v in variants for n in (*v.signature, *v.constexprs, *v.specialization)})


def _value_text(value: Any) -> str:
    """A constexpr or option value in a file name: ``"a/b c"`` -> ``a-b-c``."""
    return _NOT_VALUE.sub("-", _plain(jsonable(value)))


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return "-".join(_plain(v) for v in value)
    if isinstance(value, dict):
        return "-".join(f"{k}-{_plain(v)}" for k, v in sorted(value.items()))
    return str(value)  # bools and None read as Python writes them (True, None)


def _canonical(value: Any) -> str:
    """Equality of values as JSON sees it: ``True`` and ``1`` differ, lists compare."""
    return json.dumps(jsonable(value), sort_keys=True)


def _digest(text: str, n: int = _HASH_CHARS) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def option_block(options: Mapping[str, Any]) -> str:
    """``w4s3``, plus ``c<n>`` when num_ctas != 1 and ``r<n>`` when maxnreg is set."""
    return "".join(f"{letter}{_value_text(options[key])}" for key, letter in _OPTION_LETTERS
                   if options.get(key) is not None and not (key == "num_ctas" and options[key] == 1))


def assign_names(group: Sequence[CompiledVariant]) -> dict[str, str]:
    """compile_hash -> file stem for the variants of one (case, kernel) group."""
    variants = _unique_by_hash(group)
    if len({(v.case, v.kernel) for v in variants.values()}) > 1:
        raise ValueError("assign_names takes the variants of one (case, kernel) group")
    spell = abbreviations(_param_names(variants.values()))
    differing = _differing(variants)
    names = {h: _base_stem(v, differing, spell) for h, v in variants.items()}
    _resolve(names, lambda hs: _appended(names, hs, _dtype_suffixes([variants[h] for h in hs])))
    _resolve(names, lambda hs: _appended(names, hs, _divisibility_suffixes([variants[h] for h in hs], spell)))
    before_hash = dict(names)
    # the parameters' digest, not the compile hash (build-specific): the same variant compiled
    # by two compilers gets the same name, so their files pair up in ir-diff
    params = {h: _digest(_params_text(v)) for h, v in variants.items()}
    _resolve(names, lambda hs: {h: _with_hash(names[h], params[h]) for h in hs})
    for h, name in names.items():
        if len(name) > MAX_STEM:
            names[h] = _with_hash(name, params[h])
    # Eight hash characters shared, or long stems cut alike: the whole hash, then a digest of it
    for longer in (_value_text, lambda h: _digest(h, 32)):
        _resolve(names, lambda hs: {h: _with_hash(before_hash[h], longer(h)) for h in hs})
    return names


def _unique_by_hash(group: Sequence[CompiledVariant]) -> dict[str, CompiledVariant]:
    out: dict[str, CompiledVariant] = {}
    for v in sorted(group, key=_naming_fields):
        out.setdefault(v.compile_hash, v)
    return dict(sorted(out.items()))


def _params_text(v: CompiledVariant) -> str:
    return _canonical([v.signature, v.constexprs, v.specialization, v.options])


def _naming_fields(v: CompiledVariant) -> str:
    return _canonical([v.compile_hash, v.signature, v.constexprs, v.specialization, v.options])


def _differing(variants: Mapping[str, CompiledVariant]) -> list[str]:
    """Constexprs whose value is not the same in every variant (absent counts as a value)."""
    names = sorted({n for v in variants.values() for n in v.constexprs})
    return [n for n in names
            if len({_canonical(v.constexprs[n]) if n in v.constexprs else None for v in variants.values()}) > 1]


def _base_stem(v: CompiledVariant, differing: Sequence[str], spell: Mapping[str, str]) -> str:
    parts = [f"{spell[n]}{_value_text(v.constexprs[n])}" for n in differing if n in v.constexprs]
    parts.append(option_block(v.options))
    return _file_safe("_".join(p for p in parts if p) or "variant")


def _dtype_suffixes(variants: Sequence[CompiledVariant]) -> list[str] | None:
    dtypes = [v.element_type for v in variants]
    if len(set(dtypes)) == 1:
        return None
    return [f"__{_value_text(d)}" if d else "" for d in dtypes]


def _divisibility(attrs: Any) -> Any:
    if isinstance(attrs, Mapping):
        return attrs.get("tt.divisibility")
    if isinstance(attrs, (list, tuple)):
        for item in attrs:
            if isinstance(item, (list, tuple)) and len(item) >= 2 and item[0] == "tt.divisibility":
                return item[1]
    return None


def _divisibility_suffixes(variants: Sequence[CompiledVariant], spell: Mapping[str, str]) -> list[str] | None:
    args = sorted({a for v in variants for a in v.specialization})
    per_arg = {a: [_divisibility(v.specialization.get(a)) for v in variants] for a in args}
    differing = [a for a in args if len({_canonical(d) for d in per_arg[a]}) > 1]
    if not differing:
        return None
    return ["".join(f"__{spell[a]}div{_value_text(per_arg[a][i])}" for a in differing if per_arg[a][i] is not None)
            for i in range(len(variants))]


def _collisions(names: Mapping[str, str]) -> list[list[str]]:
    by_key: dict[str, list[str]] = defaultdict(list)
    for h in sorted(names):
        by_key[names[h].casefold()].append(h)
    return [hs for _, hs in sorted(by_key.items()) if len(hs) > 1]


def _resolve(names: dict[str, str], step: Callable[[list[str]], dict[str, str]]) -> None:
    """One step on every colliding set at once, so no set's result depends on another's."""
    names.update({h: name for members in _collisions(names) for h, name in step(members).items()})


def _appended(names: Mapping[str, str], members: Sequence[str], suffixes: Sequence[str] | None) -> dict[str, str]:
    if suffixes is None:  # the step tells none of them apart: no noise added
        return {}
    return {h: names[h] + s for h, s in zip(members, suffixes)}


def _with_hash(stem: str, hash_text: str) -> str:
    suffix = f"__{hash_text}"
    return stem[: max(MAX_STEM - len(suffix), 1)] + suffix


def _file_safe(stem: str) -> str:
    """No hidden file, nothing a shell reads as an option (only odd parameter names get here)."""
    return stem if stem[:1] not in ".-" else f"v{stem}"


def case_dir(case: str) -> str:
    """``4096x4096`` unchanged; a case that had to be made file-safe gets a digest of itself."""
    return _dir_name(case, _NOT_CASE, "case")


def kernel_dir(kernel_id: str, others: Iterable[str]) -> str:
    """The kernel's last dotted part; its full id when another kernel of the case shares
    it (case-insensitively); that plus a digest when even the full ids would."""
    rest = {o for o in others if o != kernel_id}
    for level in (_last_part_dir, _full_id_dir):
        mine = level(kernel_id).casefold()
        if all(level(o).casefold() != mine for o in rest):
            return level(kernel_id)
    return _with_digest(_full_id_dir(kernel_id), kernel_id)


def _last_part_dir(kernel_id: str) -> str:
    last = kernel_id.rsplit(".", 1)[-1]
    return _dir_name(last or kernel_id, _NOT_KERNEL, "kernel")


def _full_id_dir(kernel_id: str) -> str:
    return _dir_name(kernel_id, _NOT_KERNEL, "kernel")


def _dir_name(text: str, not_allowed: re.Pattern[str], kind: str) -> str:
    safe = not_allowed.sub("-", text)
    if safe.startswith("."):  # ".", "..", or a hidden directory
        safe = "-" + safe[1:]
    if safe == text and 0 < len(safe) <= MAX_STEM:
        return safe
    return _with_digest(safe or kind, text)  # changed: two texts that sanitize alike stay apart


def _with_digest(safe: str, original: str) -> str:
    suffix = f"-{_digest(original)}"
    return safe[: MAX_STEM - len(suffix)] + suffix


_RULES = f"""\
# File names in `ttgir/`

`<case>/<kernel>/<variant>.ttgir` holds the TTGIR of each kernel variant a run launched;
`index.tsv` lists every compiled variant with all its parameters.

- `<variant>` names what tells the variant apart from the other variants of the same kernel
  in the same case: the constexpr parameters whose values differ, as `<abbreviation><value>`
  joined by `_` (constexprs equal across the group are left out), then the compile options,
  always: `w4s3` is num_warps=4, num_stages=3.
- Multi-word parameter names are shortened to their initials (`BLOCK_SIZE_M` -> `BSM`);
  when two parameters of a kernel would share an abbreviation, both keep their full names.
  The tables below list each kernel's spellings.
- Characters of values outside `A-Z a-z 0-9 . -` are written as `-`.
- Names that would still be equal get, in turn: `__<dtype>` (the first pointer argument's
  element type, where the dtypes differ); `__<arg>div<N>` for each argument whose
  `tt.divisibility` differs, on the variants where it is N (no suffix: not specialized);
  `__<hash>`, the first {_HASH_CHARS} characters of Triton's compile hash (all of it when
  those are shared). Names are compared case-insensitively. A name longer than {MAX_STEM}
  characters is cut and ends with `__<hash>`. Parameters appear in the order of their names.
- `<kernel>` is the last part of the kernel id, or the full id when two kernels of a case
  share it; a directory whose case or kernel id had to be changed ends with a digest of it.

## Option letters

| letter | option |
|---|---|
| w | num_warps |
| s | num_stages |
| c | num_ctas (only when not 1) |
| r | maxnreg (only when set) |
"""


def legend(groups: Mapping[str, Sequence[CompiledVariant]]) -> str:
    """The text of ``naming.md``: the rules, then each kernel's parameter spellings (the
    mapping's keys are not read: variants are regrouped by kernel id)."""
    by_kernel: dict[str, list[CompiledVariant]] = defaultdict(list)
    for v in (v for members in groups.values() for v in members):
        by_kernel[v.kernel].append(v)
    parts = [_RULES]
    for kernel in sorted(by_kernel):
        spell = abbreviations(_param_names(by_kernel[kernel]))
        rows = [f"| {markdown_cell(s)} | {markdown_cell(n)} |" for n, s in sorted(spell.items(), key=lambda i: i[1])]
        parts.append("\n".join([f"## Kernel {markdown_cell(kernel)}", "",
                                "| in file names | parameter |", "|---|---|", *rows]) + "\n")
    return "\n".join(parts)
