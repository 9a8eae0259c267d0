"""Tessel from Python: load a kernel (TileLang syntax, a built-in, or source text), run it on the
CPU at tile or thread level with NumPy arrays, read its report, print, lower, emit and verify it.

    import numpy as np, tessel
    k = tessel.load("examples/python/rms_norm.py", M=64, N=128)
    r = k.run({"X": x, "W": w}, level="thread")
    assert r.passed and r.report.bank_conflicts == 0 and not r.report.findings

See docs/python.md. Errors are tessel.UsageError (a wrong call: unknown kernel or parameter, an
array of the wrong shape or dtype) and tessel.KernelError (the kernel itself is wrong), both
tessel.TesselError, carrying Tessel's message.
"""

from __future__ import annotations

import os

from . import _tessel
from ._arrays import from_wire, to_wire
from ._report import Check, Finding, Param, Proofs, Report, Run, Text

TesselError = _tessel.TesselError
UsageError = _tessel.UsageError
KernelError = _tessel.KernelError

__all__ = [
    "load", "Kernel", "Run", "Report", "Finding", "Proofs", "Check", "Param",
    "TesselError", "UsageError", "KernelError",
]


def _define(name, value):
    if isinstance(value, bool):
        return f"{name}={'True' if value else 'False'}"
    if isinstance(value, (int, float, str)):
        return f"{name}={value}"
    if hasattr(value, "name") and not isinstance(value, type):  # a dtype object (numpy, torch)
        return f"{name}={value.name}"
    raise UsageError(f"parameter {name}={value!r}: expected an int, a float, a bool or a string")


def load(kernel: str, /, *, kernel_name: str = "", **params) -> "Kernel":
    """The kernel `kernel` names, with parameter values `params` (as -D NAME=VALUE).

    `kernel` is a built-in name (`tessel list`), the path of a kernel file in TileLang syntax
    (ends in .py or contains a '/'), or a kernel file's source text (contains a newline).
    `kernel_name` picks one kernel of a file that defines several (as --kernel NAME).
    UsageError for an unknown kernel, a file that cannot be read or parsed, or a parameter the
    kernel does not have.
    """
    if not isinstance(kernel, (str, os.PathLike)):
        raise UsageError(f"tessel.load: expected a kernel name, a path or source text; "
                         f"got {type(kernel).__name__}")
    defines = [_define(n, v) for n, v in params.items()]
    text = os.fspath(kernel)
    if "\n" in text:
        return Kernel(_tessel.load_text(text, "<source>", defines, kernel_name))
    return Kernel(_tessel.load(text, defines, kernel_name))


class Kernel:
    """A kernel with its parameter values; each method builds it as the command line does."""

    def __init__(self, handle):
        self._k = handle

    @property
    def name(self) -> str:
        return self._k.name

    @property
    def params(self) -> dict:
        """Every parameter's value (as text), defaults included."""
        return {n: v for n, v, _ in self._k.params()}

    @property
    def signature(self) -> list:
        """The tensor parameters in order: Param(name, dtype, shape, output)."""
        return [Param(n, d, tuple(s), w) for n, d, s, w in self._k.signature()]

    @property
    def has_reference(self) -> bool:
        """True when a built-in reference checks the outputs of a run."""
        return self._k.has_reference

    def print(self) -> Text:
        """The tile-level IR in TileLang syntax (`tessel print`)."""
        return Text(self._k.print())

    def lower(self, target: str = "sm80") -> Text:
        """The layouts inference chose and the thread-level IR for `target` (`tessel lower`)."""
        return Text(self._k.lower(target))

    def emit(self, target: str = "cuda") -> Text:
        """CUDA (cuda, sm80, sm90) or HIP (hip, gfx90a, gfx942) source (`tessel emit`)."""
        return Text(self._k.emit(target))

    def run(self, inputs=None, *, level: str = "tile", target: str = "sm80", seed: int = 0,
            workers: int = 0, schedule: str = "in-order", expected=None, atol=None,
            rtol=None, blocks=None) -> Run:
        """Runs the kernel on the CPU (`tessel run`).

        `inputs`: a dict of parameter name -> array (NumPy, or anything with __array__ or
        __dlpack__ such as a CPU torch tensor), or a sequence in signature order (None for a
        random one); parameters not given are seeded random values (`seed`). `expected`: a dict
        of name -> array the outputs must match within `atol`/`rtol` (defaults by dtype).
        `level`: "tile" (reference semantics) or "thread" (lowered for `target`, every thread
        simulated, compared with the tile level). Returns a Run: outputs as NumPy arrays, the
        report, and `passed`. UsageError for an array of a wrong name, shape or dtype.
        `blocks` (thread level): simulate only these blocks, the others run at tile level
        (`tessel run --blocks`): a spec string ("edges", "first,last", "random:8", "0,3,7",
        "(1,2)") or a list of linear ids and coordinate tuples; `report.sampled` then says which
        blocks were simulated and holds the counters scaled to the whole grid.
        """
        sig = self._k.signature()
        run_json, text, tensors, tile = self._k.run(
            level, target, int(seed), int(workers), schedule,
            to_wire(_named(inputs, sig, "inputs")), to_wire(_named(expected, sig, "expected"), "expected"),
            atol, rtol, _blocks_spec(blocks))
        dtypes = {n: d for n, d, _, _ in sig}
        return Run(from_wire(tensors, dtypes), from_wire(tile, dtypes), run_json, text,
                   [n for n, _, _, w in sig if w])

    def verify(self, target: str = "sm80", timeout_ms: int = 60000) -> Proofs:
        """Proves the lowered kernel's layouts, fragments and accesses with Z3 (`tessel verify`)."""
        return Proofs(self._k.verify(target, int(timeout_ms)))

    def __repr__(self):
        return f"<tessel.Kernel {self.name} {self.params}>"


def _blocks_spec(blocks) -> str:
    """`blocks` (None, a spec string, or a list of ints and int tuples) as a --blocks spec."""
    if blocks is None:
        return ""
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, (list, tuple)):
        items = []
        for b in blocks:
            if isinstance(b, bool) or not isinstance(b, (int, tuple)):
                raise UsageError(f"blocks: {b!r} is neither a linear block id nor a tuple of "
                                 f"grid coordinates")
            items.append(str(b) if isinstance(b, int) else "(" + ", ".join(str(int(c)) for c in b) + ")")
        return ",".join(items)
    raise UsageError(f"blocks: expected a spec string such as 'edges' or a list of block ids; "
                     f"got {type(blocks).__name__}")


def _named(arrays, sig, what):
    """`arrays` (dict, sequence in signature order, or None) as a dict of name -> array."""
    if arrays is None:
        return {}
    if isinstance(arrays, dict):
        return arrays
    if isinstance(arrays, (list, tuple)):
        if len(arrays) > len(sig):
            raise UsageError(f"{what}: {len(arrays)} arrays for the {len(sig)} tensors "
                             f"{', '.join(n for n, *_ in sig)}")
        return {sig[i][0]: a for i, a in enumerate(arrays) if a is not None}
    raise UsageError(f"{what}: expected a dict of name -> array or a sequence in signature "
                     f"order; got {type(arrays).__name__}")
