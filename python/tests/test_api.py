"""The Python API (python/tessel): loading kernels every way, print/lower/emit, runs with NumPy
arrays and array-likes, reports, proofs, and every error path as a tessel exception carrying
Tessel's message."""

import os

import numpy as np
import pytest

import tessel

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RMS_NORM = os.path.join(ROOT, "examples", "python", "rms_norm.py")
GEMM = dict(M=64, N=64, K=32, block_M=64, block_N=64, block_K=32)


def rms_inputs(m=64, n=128, dtype=np.float16):
    rng = np.random.default_rng(3)
    return {"X": rng.standard_normal((m, n)).astype(dtype), "W": np.ones(n, dtype)}


# ---- loading ----

def test_builtin_signature_follows_its_parameters():
    k = tessel.load("gemm", **GEMM)
    assert k.name == "gemm"
    assert k.has_reference
    assert [(p.name, p.dtype, p.shape, p.output) for p in k.signature] == [
        ("A", "float16", (64, 32), False), ("B", "float16", (32, 64), False),
        ("C", "float32", (64, 64), True)]
    assert k.params["K"] == "32"


def test_source_text_loads_like_the_file():
    with open(RMS_NORM) as f:
        text = f.read()
    from_text = tessel.load(text, M=32, N=64)
    from_file = tessel.load(RMS_NORM, M=32, N=64)
    assert not from_text.has_reference
    assert from_text.print() == from_file.print()
    assert [p.shape for p in from_text.signature] == [(32, 64), (64,), (32, 64)]


def test_print_lower_emit_give_text():
    k = tessel.load("gemm", **GEMM)
    assert "T.gemm(" in k.print()
    lowered = k.lower("sm80")
    assert "T.gemm(" not in lowered and "mma" in lowered
    cuda, hip = k.emit("cuda"), k.emit("hip")
    assert "(CUDA)" in cuda.splitlines()[0] and 'extern "C"' in cuda
    assert "(HIP)" in hip.splitlines()[0]
    assert repr(k.print()) == str(k.print())  # shows as text at the prompt


# ---- runs ----

def test_builtin_run_matches_numpy_matmul():
    k = tessel.load("gemm", **GEMM)
    r = k.run(seed=5)
    assert r.passed, r.report.text
    a, b = r.tensors["A"].astype(np.float64), r.tensors["B"].astype(np.float64)
    assert set(r.outputs) == {"C"}
    # fp16 inputs multiplied exactly and accumulated in fp32 over K = 32 terms.
    np.testing.assert_allclose(r.outputs["C"], a @ b, rtol=1e-4, atol=1e-3)


def test_given_inputs_are_used_and_sequences_follow_the_signature():
    k = tessel.load("gemm", **GEMM)
    a = np.eye(64, 32, dtype=np.float16)          # A = [I; 0]: C's first 32 rows are B
    b = np.arange(32 * 64).reshape(32, 64).astype(np.float16) / 64
    r = k.run([a, b, None])
    np.testing.assert_array_equal(r.outputs["C"][:32], b.astype(np.float32))
    np.testing.assert_array_equal(r.outputs["C"][32:], 0)


class OnlyArray:
    """An array-like with __array__ only."""
    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


class OnlyDLPack:
    """An array-like with the DLPack protocol only (as CPU torch tensors have)."""
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_array_likes_and_dlpack_are_accepted():
    k = tessel.load(RMS_NORM, M=64, N=128)
    ins = rms_inputs()
    plain = k.run(ins).outputs["Y"]
    wrapped = k.run({"X": OnlyDLPack(ins["X"]), "W": OnlyArray(ins["W"])}).outputs["Y"]
    np.testing.assert_array_equal(plain, wrapped)
    fortran = k.run({"X": np.asfortranarray(ins["X"]), "W": ins["W"]}).outputs["Y"]
    np.testing.assert_array_equal(plain, fortran)


def test_thread_level_report_has_counters_and_findings():
    r = tessel.load("bug_missing_barrier").run(level="thread")
    assert not r.passed
    races = [f for f in r.report.findings if f.kind == "race"]
    assert races, r.report.text
    race = races[0]
    assert race.buffer and race.threads and not race.benign
    assert all(":" in line for line in race.lines)
    assert r.report.errors
    assert r.report.per_instruction and r.report.total.shared_requests > 0


def test_gemm_at_thread_level_counts_per_operator():
    r = tessel.load("gemm", **GEMM).run(level="thread")
    assert r.passed and r.report.findings == []
    assert r.report.bank_conflicts == 0  # the swizzled shared tiles
    ops = [c.op for c in r.report.per_operator]
    assert any("gemm" in op for op in ops) and any("copy" in op for op in ops)
    # C (64 x 64 fp32 = 16 KiB) is stored once: at least 512 sectors of 32 bytes written.
    assert r.report.total.sectors >= 512


def test_verify_returns_counterexamples():
    proofs = tessel.load("row_sum_bank_conflicts").verify("sm80")
    assert not proofs.all_proved
    (bad,) = [c for c in proofs.failed if "bank conflicts" in c.what][:1]
    assert bad.result == "failed" and "bank" in bad.counterexample


def test_bfloat16_tensors_come_back_as_bits_or_ml_dtypes():
    k = tessel.load("gemm", dtype="bfloat16", **GEMM)
    r = k.run(seed=2)
    assert r.passed, r.report.text
    a = r.tensors["A"]
    try:
        import ml_dtypes
        assert a.dtype == np.dtype(ml_dtypes.bfloat16)
        a32 = a.astype(np.float32)
        b32 = r.tensors["B"].astype(np.float32)
    except ImportError:
        # Without ml_dtypes: the raw bits; a bfloat16 is the high half of a float32.
        assert a.dtype == np.uint16
        a32 = (a.astype(np.uint32) << 16).view(np.float32)
        b32 = (r.tensors["B"].astype(np.uint32) << 16).view(np.float32)
    # bf16 products are exact in fp32; K = 32 terms accumulated in fp32.
    np.testing.assert_allclose(r.outputs["C"], a32.astype(np.float64) @ b32, rtol=1e-4, atol=1e-3)


def test_thread_level_returns_the_tile_levels_outputs_too():
    k = tessel.load(RMS_NORM, M=64, N=128)
    r = k.run(rms_inputs(), level="thread")
    assert set(r.tile_outputs) == {"Y"}
    np.testing.assert_array_equal(r.tile_outputs["Y"], r.outputs["Y"])
    assert k.run(rms_inputs()).tile_outputs == {}  # tile level: no second run


def test_cpu_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    k = tessel.load(RMS_NORM, M=64, N=128)
    ins = rms_inputs()
    from_numpy = k.run(ins).outputs["Y"]
    from_torch = k.run({n: torch.from_numpy(a) for n, a in ins.items()}).outputs["Y"]
    np.testing.assert_array_equal(from_numpy, from_torch)


# ---- errors ----

def test_wrong_shape_names_parameter_and_shapes():
    k = tessel.load(RMS_NORM, M=64, N=128)
    ins = rms_inputs(m=32)
    with pytest.raises(tessel.UsageError) as e:
        k.run(ins)
    assert str(e.value) == ("inputs['X']: kernel 'rms_norm' takes X as float16 (64, 128); the "
                            "array is float16 (32, 128)")


def test_wrong_dtype_names_parameter_and_the_fix():
    k = tessel.load(RMS_NORM, M=64, N=128)
    with pytest.raises(tessel.UsageError, match=r"takes X as float16 \(64, 128\); the array is "
                       r"float32 \(64, 128\); give a numpy float16 array"):
        k.run(rms_inputs(dtype=np.float32))


def test_missing_file():
    with pytest.raises(tessel.UsageError, match="cannot read the kernel file 'no/such.py'"):
        tessel.load("no/such.py")


def test_unknown_parameter_of_a_file_and_of_a_builtin():
    with pytest.raises(tessel.UsageError, match="has no parameter 'Q'; its parameters are M, N"):
        tessel.load(RMS_NORM, Q=3)
    with pytest.raises(tessel.UsageError, match="kernel 'gemm' has no parameter 'Q'"):
        tessel.load("gemm", Q=3)


def test_unknown_kernel_tensor_and_target():
    with pytest.raises(tessel.UsageError, match="no built-in kernel named 'gem'"):
        tessel.load("gem")
    k = tessel.load(RMS_NORM, M=64, N=128)
    with pytest.raises(tessel.UsageError, match="has no tensor parameter 'Z'; its tensors are X, W, Y"):
        k.run({"Z": np.zeros(3)})
    with pytest.raises(tessel.UsageError, match="target 'sm70'"):
        k.run(level="thread", target="sm70")
    with pytest.raises(tessel.UsageError, match="target 'sm70'"):
        k.lower("sm70")
    with pytest.raises(tessel.UsageError, match="level 'warp'"):
        k.run(level="warp")


def test_non_arrays_are_usage_errors():
    k = tessel.load(RMS_NORM, M=64, N=128)
    with pytest.raises(tessel.UsageError, match=r"inputs\['X'\]: expected an array"):
        k.run({"X": object()})
    with pytest.raises(tessel.UsageError, match="expected a dict"):
        k.run(42)


def test_kernel_errors_are_kernel_errors():
    with pytest.raises(tessel.KernelError, match="threads=2048 must be between 1 and 1024"):
        tessel.load("gemm", threads=2048).run()
    assert issubclass(tessel.KernelError, tessel.TesselError)
    assert issubclass(tessel.UsageError, tessel.TesselError)


# ---- presets and sampled thread-level runs ----

def test_a_preset_sets_the_papers_shape_and_explicit_values_win():
    # Paper Table 2: M5 is 8192 x 8192 x 8192.
    k = tessel.load("gemm", preset="M5", K=64)
    assert (k.params["M"], k.params["N"], k.params["K"]) == ("8192", "8192", "64")
    with pytest.raises(tessel.UsageError, match="has no preset 'M9'; its presets are M0"):
        tessel.load("gemm", preset="M9")


def test_sampled_run_simulates_the_chosen_blocks_and_scales_counters():
    # transpose_shared 64 x 96: a (3, 2) grid; one block makes 64 shared requests (8 warps x 4
    # stores + 4 loads), so the estimate for the grid is 6 x 64 = 384.
    k = tessel.load("transpose_shared")
    r = k.run(level="thread", blocks=[(1, 1)])
    assert r.passed
    assert r.report.sampled["simulated"] == [4]
    assert r.report.total.shared_requests == 64
    assert r.report.sampled["scaled"]["shared"]["requests"] == 384
    assert np.array_equal(r.outputs["B"], r.tensors["A"].T)  # every block's output is there
    assert k.run(level="thread", blocks="first,last").report.sampled["simulated"] == [0, 5]
    with pytest.raises(tessel.UsageError, match="'mid' is not a block spec"):
        k.run(level="thread", blocks="mid")
