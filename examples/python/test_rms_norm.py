"""Gating a kernel the way a user's CI would: rms_norm.py (TileLang syntax, no built-in
reference) against a NumPy reference at tile and thread level, with no bank conflicts, no
findings of the simulator, and every proof of `verify`. Run: pytest examples/python."""

import os

import numpy as np
import pytest

import tessel

KERNEL = os.path.join(os.path.dirname(__file__), "rms_norm.py")
M, N, EPS = 64, 128, 1e-6


def rms_norm_reference(x, w):
    """Y = X / sqrt(mean(X * X, row) + eps) * W, in float64 from the fp16 inputs."""
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + EPS) * w.astype(np.float64)


@pytest.fixture(scope="module")
def kernel():
    return tessel.load(KERNEL, M=M, N=N)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, N)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, N).astype(np.float16)
    return x, w


def test_signature_is_the_files(kernel):
    assert [(p.name, p.dtype, p.shape, p.output) for p in kernel.signature] == [
        ("X", "float16", (M, N), False), ("W", "float16", (N,), False),
        ("Y", "float16", (M, N), True)]


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_matches_numpy(kernel, data, level):
    x, w = data
    r = kernel.run({"X": x, "W": w}, level=level)
    assert r.passed, r.report.text
    y = r.outputs["Y"]
    assert y.dtype == np.float16 and y.shape == (M, N)
    # fp16 output: one rounding of a value of magnitude < 4, so 1e-2 relative is ample.
    np.testing.assert_allclose(y.astype(np.float64), rms_norm_reference(x, w), rtol=1e-2,
                               atol=1e-2)


def test_thread_level_is_clean(kernel, data):
    x, w = data
    r = kernel.run({"X": x, "W": w}, level="thread", target="sm80")
    assert r.report.findings == [], r.report.text
    assert r.report.bank_conflicts == 0, r.report.text
    assert r.report.tile_matches is True
    # Every element of X is read from global memory at least once (the traffic table adds it up
    # per operator): M * N fp16 values = 16 KiB, at least 512 sectors of 32 bytes.
    assert sum(c.sectors for c in r.report.per_operator) >= M * N * 2 // 32


def test_expected_values_checked_by_tessel(kernel, data):
    x, w = data
    y = rms_norm_reference(x, w)
    assert kernel.run({"X": x, "W": w}, expected={"Y": y}).passed
    r = kernel.run({"X": x, "W": w}, expected={"Y": y * 1.1})  # 10% off: must fail
    assert not r.passed
    (check,) = r.report.checks
    assert check["name"] == "Y" and not check["passed"] and check["mismatches"] > 0


def test_verify_proves_everything(kernel):
    proofs = kernel.verify("sm80")
    assert proofs.checks, "verify checked nothing"
    assert proofs.all_proved, proofs.failed
