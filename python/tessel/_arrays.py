"""Arrays across the boundary: users' arrays (NumPy, __array__, DLPack) as (name, NumPy type
string, shape, bytes) for the C++ side, and the kernel's tensors back as NumPy arrays.

bfloat16 and fp8 tensors come back as ml_dtypes arrays when ml_dtypes is installed, otherwise as
their raw bits (uint16, uint8); 4-bit integers as uint8 bytes, two values a byte, the even element
in the low nibble (docs/data.md).
"""

from __future__ import annotations

import numpy as np

from . import _tessel

# Kernel dtypes NumPy cannot hold by itself: the ml_dtypes type, and the raw bits without it.
_EXTENDED = {"bfloat16": ("bfloat16", "<u2"), "float8_e4m3": ("float8_e4m3fn", "u1"),
             "float8_e5m2": ("float8_e5m2", "u1")}


def as_numpy(value, origin: str) -> np.ndarray:
    """`value` as a C-contiguous NumPy array; UsageError naming `origin` when it is none."""
    if isinstance(value, np.ndarray):
        array = value
    elif hasattr(value, "__dlpack__"):
        try:
            array = np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            if not hasattr(value, "__array__"):
                raise _tessel.UsageError(
                    f"{origin}: cannot read the {type(value).__name__} through DLPack ({e}); "
                    "give a CPU array (e.g. tensor.detach().cpu())") from None
            array = np.asarray(value)
    elif hasattr(value, "__array__") or isinstance(value, (list, tuple)):
        array = np.asarray(value)
    else:
        raise _tessel.UsageError(
            f"{origin}: expected an array (NumPy, or anything with __array__ or __dlpack__); "
            f"got {type(value).__name__}")
    if array.dtype.hasobject or array.dtype.fields is not None:
        raise _tessel.UsageError(f"{origin}: arrays of dtype {array.dtype} cannot be a tensor; "
                                 "give a numeric array")
    return np.ascontiguousarray(array)


def to_wire(arrays: dict, what: str = "inputs") -> list:
    """A dict of name -> array as (name, type string, shape, bytes) tuples."""
    out = []
    for name, value in arrays.items():
        if not isinstance(name, str):
            raise _tessel.UsageError(f"{what}: keys are parameter names; got {name!r}")
        a = as_numpy(value, f"{what}['{name}']")
        out.append((name, a.dtype.str, list(a.shape), a.tobytes()))
    return out


def _numpy_dtype(descr: str, kernel_dtype: str):
    if kernel_dtype in _EXTENDED:
        ml_name, raw = _EXTENDED[kernel_dtype]
        try:
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, ml_name))
        except ImportError:
            return np.dtype(raw)
    return np.dtype(descr)


def from_wire(tensors: list, dtypes: dict) -> dict:
    """(name, type string, shape, bytes) tuples as a dict of name -> NumPy array."""
    out = {}
    for name, descr, shape, data in tensors:
        dtype = _numpy_dtype(descr, dtypes.get(name, ""))
        out[name] = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    return out
