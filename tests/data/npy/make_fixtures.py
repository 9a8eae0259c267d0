# Writes the .npy/.npz fixtures of tests/test_npy.cpp with NumPy and ml_dtypes (run once; the
# files are committed): what users' files look like, byte for byte.
#   python -m pip install numpy ml_dtypes && python make_fixtures.py
import numpy as np
import ml_dtypes

quarter = (np.arange(6).reshape(2, 3) / 4).astype(np.float16)  # 0, .25, ..., 1.25
np.save("f16_2x3.npy", quarter)
np.save("bf16_3.npy", np.array([1.5, -2, 0.25], dtype=ml_dtypes.bfloat16))
np.save("e4m3_3.npy", np.array([1.5, -2, 0.25], dtype=ml_dtypes.float8_e4m3fn))
np.save("e5m2_3.npy", np.array([1.5, -2, 0.25], dtype=ml_dtypes.float8_e5m2))  # '<f1'
np.save("f32_fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save("i32_big_3.npy", np.array([1, -2, 300], dtype=">i4"))
np.save("bool_4.npy", np.array([True, False, False, True]))
np.save("f64_scalar.npy", np.float64(2.5))
with open("f32_v2_2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([3, 4], dtype=np.float32), version=(2, 0))
np.savez_compressed("pair.npz", A=quarter, B=np.array([7, 8, 9], dtype=np.int8))
# The built-in gemm with M = N = K = 16 on A = I: C must equal B.
b = ((np.arange(256) % 17 - 8) / 4).reshape(16, 16).astype(np.float16)
np.savez("gemm_identity.npz", A=np.eye(16, dtype=np.float16), B=b)
np.save("gemm_identity_C.npy", b.astype(np.float32))
