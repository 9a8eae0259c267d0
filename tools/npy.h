// NumPy's .npy files (format versions 1.0, 2.0 and 3.0) and .npz archives of them, read into and
// written from raw arrays: a type string, a shape and the stored bytes. What the bytes mean for a
// kernel's parameter is tools/host_data.h's business.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessel::cli {

/// One array as a .npy file stores it.
struct NpyArray {
  std::string descr;  ///< NumPy's type string: "<f2", "|u1", "<V2" (ml_dtypes bfloat16), ...
  std::vector<int64_t> shape;
  bool fortran_order = false;  ///< elements stored column-major
  std::vector<uint8_t> bytes;  ///< the elements as stored (size: elements × itemsize)
};

/// The array a .npy file's contents `data` hold. `origin` names the file in errors. UsageError
/// for anything that is not a well-formed .npy file of a plain (non-structured, non-object) dtype:
/// bad magic, unknown version, malformed header, fewer data bytes than the shape needs.
NpyArray parse_npy(std::string_view data, const std::string& origin);

/// The array of a .npy file; UsageError starting with `origin` (e.g. "--input A=a.npy") when it
/// cannot be read or is malformed.
NpyArray read_npy(const std::string& path, const std::string& origin);

/// Every array of a .npz archive (numpy.savez / savez_compressed), by name ("A.npy" -> "A").
/// UsageError starting with `origin` (and naming the member) when it cannot be read or is
/// malformed.
std::map<std::string, NpyArray> read_npz(const std::string& path, const std::string& origin);

/// The .npy file (format 1.0) of `array`.
std::string npy_file(const NpyArray& array);

/// Writes `array` as a .npy file; UsageError naming the path when it cannot be written.
void write_npy(const std::string& path, const NpyArray& array);

/// Bytes per element of a type string ("<f4" -> 4); 0 when it has no size.
int npy_itemsize(std::string_view descr);

}  // namespace tessel::cli
