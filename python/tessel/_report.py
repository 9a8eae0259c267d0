"""Report objects of runs and proofs, made from the JSON reports of `tessel run --json` and
`tessel verify --json` (DESIGN.md lists their keys); the full JSON stays available as `.json`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple, Optional


class Text(str):
    """Printed IR or source: a str that shows as itself at the prompt."""

    def __repr__(self):
        return str(self)


class Param(NamedTuple):
    """A tensor parameter: its name, Tessel dtype name, shape of a run, and whether it is written."""
    name: str
    dtype: str
    shape: tuple
    output: bool


@dataclass
class Counters:
    """Memory traffic of one operator (tile level) or instruction (thread level), or of the run."""
    op: str
    shared_requests: int
    wavefronts: int
    ideal_wavefronts: int
    bank_conflicts: int
    global_requests: int
    sectors: int
    ideal_sectors: int
    cache_lines: int

    @staticmethod
    def from_json(op: str, j: dict) -> "Counters":
        s, g = j["shared"], j["global"]
        return Counters(op, s["requests"], s["wavefronts"], s["ideal_wavefronts"],
                        s["bank_conflicts"], g["requests"], g["sectors"], g["ideal_sectors"],
                        g["lines"])


@dataclass
class Finding:
    """A problem the thread-level simulator found: a race, an out-of-bounds access, a barrier
    divergence, a misaligned access, ... `lines` are the file:line:column of its statements."""
    kind: str
    message: str
    benign: bool
    buffer: Optional[str]
    element: Optional[str]
    threads: list
    blocks: list
    lines: list
    count: int

    @staticmethod
    def from_json(j: dict) -> "Finding":
        lines = [s["loc"] for s in j["sites"] if s and s.get("loc")]
        return Finding(j["kind"], j["message"], j["benign"], j["buffer"], j["element"],
                       j["threads"], j["blocks"], lines, j["count"])


@dataclass
class Report:
    """What a run found: checks of the outputs, and at thread level the simulator's counters,
    traffic per operator and per instruction, and findings."""
    json: dict
    text: str
    passed: bool = field(init=False)
    findings: list = field(init=False)
    per_operator: list = field(init=False)
    per_instruction: list = field(init=False)
    total: Optional[Counters] = field(init=False)
    sampled: Optional[dict] = field(init=False)

    def __post_init__(self):
        j = self.json
        self.passed = j["passed"]
        sim = j.get("sim")
        self.findings = [Finding.from_json(f) for f in sim["findings"]] if sim else []
        self.per_operator = [Counters.from_json(r["op"], r) for r in j.get("per_tile_op", [])]
        self.per_instruction = [Counters.from_json(r["op"], r) for r in sim["per_op"]] if sim else []
        self.total = Counters.from_json("total", sim) if sim else None
        # With blocks=...: the simulated blocks, and `sampled["scaled"]` the counters scaled
        # to the whole grid (`total` stays the measured counters of the simulated blocks).
        self.sampled = j.get("sampled")

    @property
    def errors(self) -> list:
        """The findings that are errors (not benign)."""
        return [f for f in self.findings if not f.benign]

    @property
    def bank_conflicts(self) -> Optional[int]:
        """Shared-memory bank conflicts of the whole run (thread level; None at tile level)."""
        return self.total.bank_conflicts if self.total else None

    @property
    def checks(self) -> list:
        """Comparisons with the built-in reference and with the expected arrays (JSON entries)."""
        return self.json["outputs"] + self.json["expected"]

    @property
    def tile_matches(self) -> Optional[bool]:
        """Thread level: whether every tensor equals the tile level's (None when it did not run)."""
        tile = self.json.get("tile")
        return tile["matches"] if tile else None

    def __str__(self):
        return self.text


class Run:
    """The result of Kernel.run: `outputs` (the tensors the kernel writes) and `tensors` (every
    parameter after the run, inputs included) as NumPy arrays, `tile_outputs` (thread level: the
    tile level's), the `report`, and `passed`."""

    def __init__(self, tensors, tile_tensors, run_json, text, written):
        self.tensors = tensors
        self.outputs = {n: tensors[n] for n in written}
        self.tile_outputs = {n: tile_tensors[n] for n in written if n in tile_tensors}
        self.report = Report(json.loads(run_json), text)

    @property
    def passed(self) -> bool:
        return self.report.passed

    def __getitem__(self, name):
        return self.tensors[name]

    def __repr__(self):
        return f"<tessel.Run {'PASSED' if self.passed else 'FAILED'} outputs={list(self.outputs)}>"


class Check(NamedTuple):
    """One proof: what it proves, "proved", "failed" or "undecided", the counterexample of a
    failed one, and its time."""
    what: str
    result: str
    counterexample: Optional[str]
    ms: float


class Proofs:
    """The result of Kernel.verify: every check, and whether all were proved."""

    def __init__(self, verify_json: str):
        self.json = json.loads(verify_json)
        self.checks = [Check(c["what"], c["result"], c["counterexample"], c["ms"])
                       for c in self.json["checks"]]

    @property
    def all_proved(self) -> bool:
        return all(c.result == "proved" for c in self.checks)

    @property
    def failed(self) -> list:
        """The checks that failed or were undecided."""
        return [c for c in self.checks if c.result != "proved"]

    def __repr__(self):
        j = self.json
        return (f"<tessel.Proofs {j['kernel']} on {j['target']}: {j['proved']} proved, "
                f"{j['failed']} failed, {j['undecided']} undecided>")
