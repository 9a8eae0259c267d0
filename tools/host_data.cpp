// Users' arrays as kernel tensors: storage type strings, signature checks, byte and axis order.
#include "tools/host_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/buffer_accesses.h"
#include "core/error.h"
#include "interp/tile_interpreter.h"
#include "tools/cli.h"
#include "tools/file_io.h"

namespace tessel::cli {

namespace {

/// The type strings (without byte order) an array of `dtype` may be stored as.
std::vector<std::string> accepted_kinds(DataType dtype) {
  switch (dtype.code) {
    case TypeCode::kBFloat:
      return {"V2"};
    case TypeCode::kE4M3:
      return {"V1"};
    case TypeCode::kE5M2:
      return {"V1", "f1"};
    default:
      break;
  }
  if (dtype.bits == 4) return {"u1", "i1"};
  return {npy_descr(dtype).substr(1)};
}

/// The Tessel dtype of a plain NumPy type string, when there is one ("f2" -> float16).
std::optional<DataType> numpy_dtype(const std::string& kind) {
  int size = npy_itemsize("<" + kind);
  switch (kind[0]) {
    case 'f':
      if (size == 2 || size == 4 || size == 8) return DataType{TypeCode::kFloat, size * 8, 1};
      break;
    case 'i':
      return DataType{TypeCode::kInt, size * 8, 1};
    case 'u':
      return DataType{TypeCode::kUInt, size * 8, 1};
    case 'b':
      if (size == 1) return DataType::boolean();
      break;
    default:
      break;
  }
  return std::nullopt;
}

/// How to store `dtype` from NumPy, for the fix in messages.
std::string how_to_store(DataType dtype) {
  switch (dtype.code) {
    case TypeCode::kBFloat:
      return "an ml_dtypes.bfloat16 array";
    case TypeCode::kE4M3:
      return "an ml_dtypes.float8_e4m3fn array";
    case TypeCode::kE5M2:
      return "an ml_dtypes.float8_e5m2 array";
    default:
      break;
  }
  if (dtype.bits == 4) return "a uint8 array of packed pairs (even element in the low nibble)";
  if (dtype.is_bool()) return "a numpy bool array";
  return "a numpy " + dtype.name() + " array (e.g. a.astype(np." + dtype.name() + "))";
}

/// "float32 (128, 64)" for an array, with its type string when NumPy has no name for it.
std::string describe(const NpyArray& a) {
  std::string kind = a.descr.substr(1);
  std::optional<DataType> t = numpy_dtype(kind);
  std::string name = t                              ? t->name()
                     : kind == "V2" || kind == "V1" ? kind + " (ml_dtypes or raw bytes)"
                                                    : "'" + a.descr + "'";
  return name + " " + shape_text(a.shape);
}

std::string param_text(const ParamInfo& p) {
  return "kernel '" + p.kernel + "' takes " + p.name + " as " + p.dtype.name() + " " +
         shape_text(p.shape);
}

/// The array's bytes in C order, little-endian, as a tensor of `dtype` and `shape`.
HostTensor to_tensor(const NpyArray& a, DataType dtype, const std::vector<int64_t>& shape,
                     const std::string& origin) {
  HostTensor t(dtype, shape);
  const int itemsize = npy_itemsize(a.descr);
  internal_check(static_cast<size_t>(dtype.storage_bytes(t.size())) == a.bytes.size(),
                 "to_tensor: byte count differs from the shape");
  const bool swap = a.descr[0] == '>' && itemsize > 1;
  const bool transpose = a.fortran_order && a.shape.size() > 1;
  if (transpose && dtype.bits == 4) {
    throw UsageError(origin + ": packed 4-bit data must be stored in C order " +
                     "(np.ascontiguousarray), not Fortran order");
  }
  std::vector<int64_t> index(a.shape.size(), 0);
  const int64_t count = static_cast<int64_t>(a.bytes.size()) / itemsize;
  for (int64_t c = 0; c < count; ++c) {
    int64_t src = c;
    if (transpose) {  // Fortran order: the first index varies fastest
      src = 0;
      for (size_t d = a.shape.size(); d-- > 0;) src = src * a.shape[d] + index[d];
      for (size_t d = a.shape.size(); d-- > 0;) {
        if (++index[d] < a.shape[d]) break;
        index[d] = 0;
      }
    }
    const uint8_t* from = a.bytes.data() + src * itemsize;
    uint8_t* to = t.data() + c * itemsize;
    if (swap)
      std::reverse_copy(from, from + itemsize, to);
    else
      std::memcpy(to, from, itemsize);
  }
  return t;
}

/// True when `a`'s shape stores a tensor of `p`'s shape (4-bit types: packed, or 1-d bytes).
bool shape_fits(const NpyArray& a, const ParamInfo& p, DataType dtype) {
  if (a.shape == npy_shape(dtype, p.shape)) return true;
  if (dtype.bits != 4) return false;
  int64_t size = 1;
  for (int64_t e : p.shape) size *= e;
  return a.shape == std::vector<int64_t>{(size + 1) / 2};
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string t = "(";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

std::vector<ParamInfo> kernel_signature(const Kernel& kernel,
                                        const std::map<std::string, int64_t>& dims) {
  auto shapes = param_shapes(kernel, dims);
  ReadsWrites rw;
  for (const Kernel& launch : launches_of(kernel)) {
    ReadsWrites one = reads_writes(launch->body);
    rw.writes.insert(one.writes.begin(), one.writes.end());
  }
  std::vector<ParamInfo> out;
  for (const Buffer& b : kernel->params) {
    out.push_back(
        {kernel->name, b->name, b->dtype, shapes.at(b->name), rw.writes.count(b.get()) > 0});
  }
  return out;
}

std::string npy_descr(DataType dtype) {
  const std::string bytes = std::to_string(std::max(1, dtype.bits / 8));
  switch (dtype.code) {
    case TypeCode::kFloat:
      return "<f" + bytes;
    case TypeCode::kBFloat:
      return "<V2";
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return "<V1";
    case TypeCode::kBool:
      return "|b1";
    case TypeCode::kInt:
      return dtype.bits == 4 ? "|u1" : (dtype.bits == 8 ? "|i" : "<i") + bytes;
    case TypeCode::kUInt:
      return (dtype.bits <= 8 ? "|u" : "<u") + bytes;
  }
  internal_error("npy_descr: unknown TypeCode");
}

std::vector<int64_t> npy_shape(DataType dtype, const std::vector<int64_t>& shape) {
  if (dtype.bits != 4 || shape.empty()) return shape;
  std::vector<int64_t> packed = shape;
  if (packed.back() % 2 == 0) {
    packed.back() /= 2;
    return packed;
  }
  int64_t size = 1;
  for (int64_t e : shape) size *= e;
  return {(size + 1) / 2};
}

HostTensor input_tensor(const NpyArray& array, const ParamInfo& param, const std::string& origin) {
  std::vector<std::string> kinds = accepted_kinds(param.dtype);
  if (std::find(kinds.begin(), kinds.end(), array.descr.substr(1)) == kinds.end()) {
    throw UsageError(origin + ": " + param_text(param) + "; the array is " + describe(array) +
                     "; give " + how_to_store(param.dtype));
  }
  if (!shape_fits(array, param, param.dtype)) {
    std::string want =
        param.dtype.bits == 4
            ? " (stored packed as uint8 " + shape_text(npy_shape(param.dtype, param.shape)) + ")"
            : "";
    throw UsageError(origin + ": " + param_text(param) + want + "; the array is " +
                     describe(array));
  }
  return to_tensor(array, param.dtype, param.shape, origin);
}

HostTensor expected_tensor(const NpyArray& array, const ParamInfo& param,
                           const std::string& origin) {
  std::vector<std::string> kinds = accepted_kinds(param.dtype);
  std::string kind = array.descr.substr(1);
  if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) {
    return input_tensor(array, param, origin);
  }
  std::optional<DataType> t = numpy_dtype(kind);
  if (!t) {
    throw UsageError(origin + ": " + param_text(param) + "; the expected array is " +
                     describe(array) + ", which holds no numbers Tessel can compare; give " +
                     how_to_store(param.dtype) + " or any float/int/bool array");
  }
  if (array.shape != param.shape) {
    throw UsageError(origin + ": " + param_text(param) + "; the expected array is " +
                     describe(array));
  }
  return to_tensor(array, *t, param.shape, origin);
}

NpyArray tensor_array(const HostTensor& tensor) {
  NpyArray a;
  a.descr = npy_descr(tensor.dtype());
  a.shape = npy_shape(tensor.dtype(), tensor.shape());
  a.bytes.assign(tensor.data(), tensor.data() + tensor.dtype().storage_bytes(tensor.size()));
  return a;
}

namespace {

/// The bytes a run holds at its peak (check_host_memory), in parts.
struct HostMemoryNeed {
  double tile_peak = 0;                                 ///< the same run at tile level
  double held = 0;                                      ///< the tensors and their copies
  double shadow = 0;                                    ///< the simulator's shadow
  std::vector<std::pair<double, std::string>> tensors;  ///< bytes and "name (shape) dtype"
  double total() const { return held + shadow; }
};

HostMemoryNeed host_memory_need(const std::vector<ParamInfo>& signature,
                                const std::vector<std::string>& outputs, bool thread,
                                bool sampled) {
  HostMemoryNeed need;
  double all = 0, out = 0, written = 0, elements = 0;
  for (const ParamInfo& p : signature) {
    double n = 1;
    for (int64_t e : p.shape) n *= static_cast<double>(e);
    double bytes = n * p.dtype.storage_bits() / 8;
    all += bytes;
    elements += std::ceil(n / 1024) * 1024;  // the shadow's pages
    out += bytes * static_cast<double>(std::count(outputs.begin(), outputs.end(), p.name));
    if (p.written) written += bytes;
    need.tensors.emplace_back(bytes, p.name + " " + shape_text(p.shape) + " " + p.dtype.name());
  }
  // The run's tensors and the reference's outputs (the reference borrows the inputs). The
  // thread level adds one copy of the tensors the kernel writes (the tile level runs on it
  // to compare with; a multi-worker run that runs again in block order restores from it) and
  // the race shadow (24 bytes an element; a sampled run keeps it for the sampled blocks'
  // elements only, within what is left).
  need.tile_peak = all + out;
  need.held = thread ? all + out + written : need.tile_peak;
  need.shadow = thread && !sampled ? 24 * elements : 0;
  return need;
}

}  // namespace

bool fits_host_memory(const std::vector<ParamInfo>& signature,
                      const std::vector<std::string>& outputs, bool thread, bool sampled) {
  return host_memory_need(signature, outputs, thread, sampled).total() <=
         static_cast<double>(host_memory_budget());
}

int64_t check_host_memory(const std::vector<ParamInfo>& signature,
                          const std::vector<std::string>& outputs, bool thread, bool sampled) {
  const double budget = static_cast<double>(host_memory_budget());
  HostMemoryNeed need = host_memory_need(signature, outputs, thread, sampled);
  if (need.total() <= budget || signature.empty())
    return static_cast<int64_t>(std::max(0.0, budget - need.held));
  auto& tensors = need.tensors;
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  auto mib = [](double bytes) {
    return std::to_string(static_cast<int64_t>(bytes / (1 << 20))) + " MiB";
  };
  std::string list;
  for (size_t i = 0; i < tensors.size() && i < 3; ++i)
    list += (i ? ", " : "") + tensors[i].second + " = " + mib(tensors[i].first);
  std::string how = "with the reference's outputs";
  if (thread) {
    how = "with the reference's outputs and the tile level's copy of the written ones";
    if (!sampled) {
      how += ", and the simulator's 24-byte shadow of each element (" + mib(need.shadow) +
             "; a sample, --blocks random:8, keeps it for the sampled blocks only)";
    }
  }
  std::string fix = "choose smaller sizes with -D";
  if (thread && need.tile_peak <= budget)
    fix += ", or run at tile level (" + mib(need.tile_peak) + ")";
  user_error("kernel '" + signature.front().kernel + "': its tensors would need " +
             mib(need.total()) + " (" + list + (tensors.size() > 3 ? ", ..." : "") + "; " + how +
             "), more than three quarters of this machine's memory (" + mib(budget) + "); " + fix);
}

}  // namespace tessel::cli
