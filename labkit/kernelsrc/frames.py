"""Call-frame instructions in a callgrind count: what the layout of functions costs.

A function call costs instructions that are not the function's work: the
``call`` and ``ret``, the pushes and pops of the callee-saved registers, the
stack adjustment (and ``endbr64``/``leave`` where the compiler emits them).
Two codes that take the same steps can differ in these alone, when one splits
its steps into more out-of-line functions than the other.  This module counts
them, per function, in a callgrind run made with :data:`VALGRIND_ARGS`
(instruction-level positions): each executed instruction's address is looked
up in the binary's disassembly (``objdump -d``) and counted as *frame* when its
mnemonic is one of :data:`FRAME_MNEMONICS`, or an ``add``/``sub`` whose
destination is ``%rsp``.

It also counts, per function, the *user-access checks*: instructions whose
source line lies in a header of :data:`USER_ACCESS_FILES` (inlined there), the
architecture's ``access_ok()`` and the generic ``copy_from_user()`` /
``clear_user()`` wrappers in the real code, labkit's ``lk_access_ok()``
(``usermem.h``) in the model.  Callgrind knows each instruction's source file
(its ``fl=``/``fi=``/``fe=`` lines).  The two sides check the same thing with
different code: user-mode Linux's ``access_ok()`` is its own, not x86-64's.

Shared objects are loaded at an address callgrind reports and ``objdump`` does
not know: the load offset is found per object as the most common difference
between a function's lowest executed address (its entry, which every call
executes) and the function's symbol address.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from labkit._tools import ToolFailed, run_tool

#: callgrind options that make its output positions instruction addresses, uncompressed.
VALGRIND_ARGS = ["--dump-instr=yes", "--compress-pos=no", "--compress-strings=no"]
#: Mnemonics counted as call-frame instructions.
FRAME_MNEMONICS = frozenset({"push", "pop", "call", "ret", "leave", "endbr64"})
#: Source files whose inlined code is a user-access check (matched on the path's end): the
#: kernel's ``asm/uaccess.h`` (any architecture), ``asm-generic/uaccess.h``,
#: ``linux/uaccess.h`` and ``linux/thread_info.h`` (``check_copy_size()``), and the
#: model's ``usermem.h`` (``lk_access_ok()``).
USER_ACCESS_FILES = ("/uaccess.h", "/thread_info.h", "/usermem.h")

_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_SYM = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")


def is_frame(mnemonic: str, operands: str) -> bool:
    """Is one instruction (``objdump``'s mnemonic and operands) a call-frame instruction?"""
    m = mnemonic.split(".")[0].rstrip("q")
    if m in FRAME_MNEMONICS or mnemonic in FRAME_MNEMONICS:
        return True
    return m in ("add", "sub") and operands.replace(" ", "").endswith(",%rsp")


@lru_cache(maxsize=8)
def disassembly(binary: str) -> tuple[dict[int, bool], dict[str, int]]:
    """(frame flag per instruction address, address per function symbol) of ``binary``."""
    out = run_tool(
        ["objdump", "-d", "--no-show-raw-insn", binary], what=f"disassembling {binary}"
    ).stdout
    flags: dict[int, bool] = {}
    symbols: dict[str, int] = {}
    for line in out.splitlines():
        s = _SYM.match(line)
        if s:
            symbols.setdefault(s.group(2), int(s.group(1), 16))
            continue
        m = _INSN.match(line)
        if m:
            flags[int(m.group(1), 16)] = is_frame(m.group(2), m.group(3))
    return flags, symbols


def _executed(out_file: Path) -> dict[tuple[str, str], dict[int, list]]:
    """Self instructions and source file per executed address, per (object, function), of
    one callgrind output: ``{(ob, fn): {address: [count, file]}}``."""
    costs: dict[tuple[str, str], dict[int, list]] = {}
    ob = fn = fl = here = ""
    skip_next = False
    npos = 1  # position columns before the cost ("positions: instr line": 2)
    for line in Path(out_file).read_text().splitlines():
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("ob="):
            ob = line[3:]
        elif line.startswith("fl="):
            fl = here = line[3:]
        elif line.startswith(("fi=", "fe=")):
            here = line[3:]  # inlined code from another file, or back to the function's
        elif line.startswith("fn="):
            fn, here = line[3:], fl
        elif line.startswith("calls="):
            skip_next = True  # the next cost line is the call's inclusive cost
        elif line.startswith("0x"):
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if len(parts) > npos:
                per = costs.setdefault((ob, fn), {})
                addr = int(parts[0], 16)
                per.setdefault(addr, [0, here])[0] += int(parts[npos])
    return costs


def is_user_access(path: str) -> bool:
    """Is code from source file ``path`` a user-access check (:data:`USER_ACCESS_FILES`)?"""
    return path.endswith(USER_ACCESS_FILES)


def instruction_classes(
    out_file: Path, binaries: dict[str, str] | None = None
) -> dict[str, dict[str, int]]:
    """Call-frame and user-access instructions per function (self cost) in one output.

    Args:
        out_file: a callgrind output written with :data:`VALGRIND_ARGS`.
        binaries: the file to disassemble per object name as callgrind reports
            it (default: the object name itself).

    Returns:
        Function name -> ``{"frame": n, "access": n}``: its executed
        instructions that are call-frame instructions, and of the others those
        whose source is a user-access header (:func:`is_user_access`).
        Functions of objects that cannot be disassembled are left out.
    """
    per_object: dict[str, dict[str, dict[int, list]]] = {}
    for (ob, fn), addrs in _executed(out_file).items():
        per_object.setdefault(ob, {})[fn] = addrs
    result: dict[str, dict[str, int]] = {}
    for ob, fns in per_object.items():
        binary = (binaries or {}).get(ob, ob)
        if not binary or not Path(binary).is_file():
            continue
        try:
            flags, symbols = disassembly(binary)
        except ToolFailed:
            continue
        offsets = Counter(
            min(addrs) - symbols[fn] for fn, addrs in fns.items() if fn in symbols and addrs
        )
        if not offsets:
            continue
        load = offsets.most_common(1)[0][0]
        for fn, addrs in fns.items():
            got = result.setdefault(fn, {"frame": 0, "access": 0})
            for a, (count, path) in addrs.items():
                if flags.get(a - load, False):
                    got["frame"] += count
                elif is_user_access(path):
                    got["access"] += count
    return result


__all__ = [
    "FRAME_MNEMONICS",
    "USER_ACCESS_FILES",
    "VALGRIND_ARGS",
    "disassembly",
    "instruction_classes",
    "is_frame",
    "is_user_access",
]
