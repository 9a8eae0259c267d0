// Users' arrays as a kernel's tensors and back: which NumPy type string each Tessel dtype is
// stored as, the checks of a given array against the kernel's signature (with errors naming the
// parameter, the expected and the given shape and dtype), and the kernel's signature itself.
//
// Storage of each dtype (what NumPy and ml_dtypes write): float16/32/64 '<f2' '<f4' '<f8';
// int8..int64 '|i1' '<i2' '<i4' '<i8' and the unsigned 'u' kinds; bool '|b1'; bfloat16 '<V2'
// (ml_dtypes.bfloat16); float8_e4m3 '<V1' (ml_dtypes.float8_e4m3fn); float8_e5m2 '<V1' (read
// also as '<f1', which ml_dtypes.float8_e5m2 writes but NumPy cannot load back). 4-bit integers
// are packed two a byte, the even element in the low nibble: a '|u1' array whose last dimension
// is half the tensor's (or a 1-d array of ceil(size / 2) bytes when that is odd).
#pragma once

#include <string>
#include <vector>

#include "core/kernel.h"
#include "interp/host_tensor.h"
#include "tools/npy.h"

namespace tessel::cli {

/// One tensor parameter of a kernel, with the concrete shape of a run.
struct ParamInfo {
  std::string kernel;  ///< the kernel's name, for messages
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  bool written = false;  ///< the kernel writes it (an output)
};

/// The kernel's tensor parameters in signature order, shapes fixed by `dims` (symbolic sizes).
std::vector<ParamInfo> kernel_signature(const Kernel& kernel,
                                        const std::map<std::string, int64_t>& dims);

/// The type string `dtype` is written with.
std::string npy_descr(DataType dtype);

/// The shape of the array that stores a tensor of `dtype` and `shape` (4-bit types: packed).
std::vector<int64_t> npy_shape(DataType dtype, const std::vector<int64_t>& shape);

/// `array` as the value of parameter `param`. Its dtype and shape must be the parameter's
/// (byte order and Fortran order are converted). UsageError starting with `origin` (e.g.
/// "--input A=a.npy") naming the parameter, its shape and dtype and the array's, otherwise.
HostTensor input_tensor(const NpyArray& array, const ParamInfo& param, const std::string& origin);

/// `array` as expected values of `param`: its shape must be the parameter's; any numeric dtype
/// NumPy holds is accepted (compared by value), and the ml_dtypes storage of `param`'s dtype.
HostTensor expected_tensor(const NpyArray& array, const ParamInfo& param,
                           const std::string& origin);

/// The array that stores `tensor` (the storage above, C order, little-endian).
NpyArray tensor_array(const HostTensor& tensor);

/// User error (naming the kernel, the largest tensors with their shapes, the total and a fix)
/// when a run of `signature`'s tensors would hold more than host_memory_budget() at its peak,
/// checked before anything is allocated: the tensors once and the reference's copies of
/// `outputs` (a name given twice counts twice: an output and its error bound; none for a
/// sampled reference); at `thread` level also one copy of the tensors the kernel writes and,
/// unless `sampled`, the simulator's shadow of every element (24 bytes). Returns the bytes left
/// beside the tensors: what the shadow may take.
int64_t check_host_memory(const std::vector<ParamInfo>& signature,
                          const std::vector<std::string>& outputs, bool thread, bool sampled);

/// True when check_host_memory would accept the run.
bool fits_host_memory(const std::vector<ParamInfo>& signature,
                      const std::vector<std::string>& outputs, bool thread, bool sampled);

/// "(256, 128)".
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace tessel::cli
