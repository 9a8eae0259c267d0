// The CUDA runner over the driver API, opened with dlopen (the few entry points it needs are
// declared here with their documented C signatures, so no CUDA header is needed to build).
#include "codegen/gpu_runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "codegen/tensor_map_encoding.h"
#include "codegen/toolchain.h"
#include "core/target.h"

namespace tessel {

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
constexpr int kComputeMajor = 75, kComputeMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
constexpr int kMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct Driver {
  void* lib = nullptr;
  std::string error;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  /// Optional (CUDA 12 drivers): null where the driver has no TMA.
  CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*,
                                     const unsigned*, const unsigned*, int, int, int,
                                     int) = nullptr;

  template <typename F>
  bool get(F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn) error = std::string("the CUDA driver has no ") + name;
    return fn != nullptr;
  }
};

Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.lib) {
      d.error = "no CUDA driver on this machine (libcuda.so.1 cannot be opened)";
      return;
    }
    bool ok = d.get(d.cuInit, "cuInit") && d.get(d.cuDeviceGetCount, "cuDeviceGetCount") &&
              d.get(d.cuDeviceGet, "cuDeviceGet") && d.get(d.cuDeviceGetName, "cuDeviceGetName") &&
              d.get(d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
              d.get(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              d.get(d.cuCtxSetCurrent, "cuCtxSetCurrent") &&
              d.get(d.cuCtxSynchronize, "cuCtxSynchronize") &&
              d.get(d.cuModuleLoadData, "cuModuleLoadData") &&
              d.get(d.cuModuleUnload, "cuModuleUnload") &&
              d.get(d.cuModuleGetFunction, "cuModuleGetFunction") &&
              d.get(d.cuFuncSetAttribute, "cuFuncSetAttribute") &&
              d.get(d.cuMemAlloc, "cuMemAlloc_v2") && d.get(d.cuMemFree, "cuMemFree_v2") &&
              d.get(d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
              d.get(d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") && d.get(d.cuMemsetD8, "cuMemsetD8_v2") &&
              d.get(d.cuLaunchKernel, "cuLaunchKernel") &&
              d.get(d.cuGetErrorString, "cuGetErrorString") &&
              d.get(d.cuEventCreate, "cuEventCreate") && d.get(d.cuEventRecord, "cuEventRecord") &&
              d.get(d.cuEventSynchronize, "cuEventSynchronize") &&
              d.get(d.cuEventDestroy, "cuEventDestroy_v2") &&
              (d.get(d.cuEventElapsedTime, "cuEventElapsedTime_v2") ||
               d.get(d.cuEventElapsedTime, "cuEventElapsedTime"));
    if (ok) d.error.clear();
    if (!ok) return;
    d.cuTensorMapEncodeTiled = reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(
        dlsym(d.lib, "cuTensorMapEncodeTiled"));
    if (CUresult r = d.cuInit(0); r != 0) {
      d.error = "the CUDA driver does not start (cuInit error " + std::to_string(r) + ")";
      return;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != 0 || count == 0) d.error = "no CUDA device on this machine";
  });
  return d;
}

std::string message(CUresult r) {
  const char* s = nullptr;
  if (driver().cuGetErrorString) driver().cuGetErrorString(r, &s);
  return std::string(s ? s : "unknown CUDA error") + " (" + std::to_string(r) + ")";
}

struct Device {
  CUdevice dev = 0;
  int major = 0, minor = 0;
  std::string name;
};

bool first_device(Device& out, std::string* why) {
  Driver& d = driver();
  if (!d.error.empty()) {
    if (why) *why = d.error;
    return false;
  }
  d.cuDeviceGet(&out.dev, 0);
  d.cuDeviceGetAttribute(&out.major, kComputeMajor, out.dev);
  d.cuDeviceGetAttribute(&out.minor, kComputeMinor, out.dev);
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof name, out.dev);
  out.name = name;
  return true;
}

}  // namespace

std::string cuda_device_target(std::string* why) {
  Device dev;
  if (!first_device(dev, why)) return "";
  const Target* target = nvidia_target_for(dev.major * 10 + dev.minor);
  if (!target) {
    std::string names;
    for (const Target& t : all_targets()) {
      if (t.nvidia) names += (names.empty() ? "" : ", ") + t.arch;
    }
    if (why) {
      *why = "the GPU (" + dev.name + ", sm_" + std::to_string(dev.major) +
             std::to_string(dev.minor) + ") runs none of the NVIDIA targets' code (" + names +
             "; a cubin runs on its own major version only)";
    }
    return "";
  }
  return target->name;
}

std::unique_ptr<CudaSession> CudaSession::open(std::string* why) {
  Device dev;
  if (!first_device(dev, why)) return nullptr;
  std::string target = cuda_device_target(why);
  if (target.empty()) return nullptr;
  std::unique_ptr<CudaSession> s(new CudaSession());
  s->dev_ = dev.dev;
  s->target_ = target;
  s->device_ = dev.name + " (sm_" + std::to_string(dev.major) + std::to_string(dev.minor) + ")";
  Driver& d = driver();
  CUcontext ctx = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, dev.dev); r) {
    if (why) *why = "cannot create a context: " + message(r);
    return nullptr;
  }
  d.cuCtxSetCurrent(ctx);
  return s;
}

CudaSession::~CudaSession() {
  for (void* m : modules_) driver().cuModuleUnload(m);
}

uint64_t CudaSession::alloc(size_t bytes) {
  CUdeviceptr p = 0;
  if (CUresult r = driver().cuMemAlloc(&p, std::max<size_t>(bytes, 1)); r) {
    error_ = "cuMemAlloc of " + std::to_string(bytes) + " bytes: " + message(r);
    return 0;
  }
  return p;
}

void CudaSession::free(uint64_t ptr) {
  if (ptr) driver().cuMemFree(ptr);
}

bool CudaSession::upload(uint64_t dst, const void* src, size_t bytes) {
  CUresult r = driver().cuMemcpyHtoD(dst, src, bytes);
  if (r) error_ = "copy to the device: " + message(r);
  return r == 0;
}

bool CudaSession::download(void* dst, uint64_t src, size_t bytes) {
  CUresult r = driver().cuMemcpyDtoH(dst, src, bytes);
  if (r) error_ = "copy from the device: " + message(r);
  return r == 0;
}

bool CudaSession::fill(uint64_t dst, uint8_t byte, size_t bytes) {
  CUresult r = driver().cuMemsetD8(dst, byte, bytes);
  if (r) error_ = "memset: " + message(r);
  return r == 0;
}

std::vector<void*> CudaSession::load(const EmittedSource& source,
                                     const std::vector<HostLaunch>& launches,
                                     double* compile_seconds) {
  std::string dir = (std::filesystem::temp_directory_path() / "tessel_gpu").string();
  CompileResult c = compile_device_code(source, find_target(target_), dir);
  if (compile_seconds) *compile_seconds = c.seconds;
  if (!c.compiled) {
    error_ = c.skipped.empty() ? "nvcc failed:\n" + c.log : c.skipped;
    return {};
  }
  std::ifstream f(c.output, std::ios::binary);
  std::vector<char> cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Driver& d = driver();
  CUmodule module = nullptr;
  if (CUresult r = d.cuModuleLoadData(&module, cubin.data()); r) {
    error_ = "loading the cubin: " + message(r);
    return {};
  }
  modules_.push_back(module);
  std::vector<void*> functions;
  for (const HostLaunch& l : launches) {
    CUfunction fn = nullptr;
    if (CUresult r = d.cuModuleGetFunction(&fn, module, l.entry.c_str()); r) {
      error_ = "finding " + l.entry + ": " + message(r);
      return {};
    }
    if (l.dynamic_shared_bytes > 48 * 1024) {
      CUresult r =
          d.cuFuncSetAttribute(fn, kMaxDynamicShared, static_cast<int>(l.dynamic_shared_bytes));
      if (r) {
        error_ = l.entry + ": allowing " + std::to_string(l.dynamic_shared_bytes) +
                 " bytes of shared memory: " + message(r);
        return {};
      }
    }
    functions.push_back(fn);
  }
  return functions;
}

double CudaSession::time(const std::function<void()>& fn) {
  Driver& d = driver();
  CUevent start = nullptr, stop = nullptr;
  d.cuEventCreate(&start, 0);
  d.cuEventCreate(&stop, 0);
  d.cuEventRecord(start, nullptr);
  fn();
  d.cuEventRecord(stop, nullptr);
  d.cuEventSynchronize(stop);
  float ms = -1;
  d.cuEventElapsedTime(&ms, start, stop);
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  return ms;
}

double CudaSession::launch(const std::vector<void*>& functions,
                           const std::vector<HostLaunch>& launches,
                           std::vector<std::vector<void*>>& params) {
  Driver& d = driver();
  std::string refused;  // the first launch the driver refused
  double ms = time([&] {
    for (size_t i = 0; i < launches.size() && refused.empty(); ++i) {
      const HostLaunch& l = launches[i];
      const auto u = [](int64_t v) { return static_cast<unsigned>(v); };
      CUresult r = d.cuLaunchKernel(functions[i], u(l.grid[0]), u(l.grid[1]), u(l.grid[2]),
                                    u(l.block[0]), u(l.block[1]), u(l.block[2]),
                                    u(l.dynamic_shared_bytes), nullptr, params[i].data(), nullptr);
      if (r) refused = "launching " + l.entry + ": " + message(r);
    }
  });
  if (!refused.empty()) {
    error_ = refused;
    return -1;
  }
  if (CUresult r = d.cuCtxSynchronize(); r) {
    std::string entries;
    for (const HostLaunch& l : launches) entries += (entries.empty() ? "" : ", ") + l.entry;
    error_ = "running " + entries + ": " + message(r);
    return -1;
  }
  return ms;
}

bool CudaSession::encode_tensor_maps(const EmittedSource& source,
                                     const std::vector<TensorMapArg>& maps,
                                     const std::vector<uint64_t>& pointers,
                                     const std::vector<std::vector<int64_t>>& shapes,
                                     std::vector<TensorMapBytes>& out) {
  out.assign(maps.size(), TensorMapBytes{});
  for (size_t j = 0; j < maps.size(); ++j) {
    const TensorMapArg& m = maps[j];
    auto it = std::find(source.arguments.begin(), source.arguments.end(), m.tensor);
    const size_t i = static_cast<size_t>(it - source.arguments.begin());
    if (it == source.arguments.end() || i >= pointers.size() || i >= shapes.size() ||
        !pointers[i]) {
      error_ = "tensor map " + m.name + " names '" + m.tensor +
               "', which is not a tensor argument of the kernel";
      return false;
    }
    std::optional<TensorMapEncoding> e =
        encode_tensor_map(m.tensor, m.dtype, shapes[i], m.box, m.swizzle, &error_);
    if (!e) return false;
    if (!driver().cuTensorMapEncodeTiled) {
      error_ = "the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)";
      return false;
    }
    // A rank-1 map has no strides, but the driver refuses a null array (seen on an H200: the
    // GEMVs' 1-d maps were "invalid argument").
    const uint64_t no_strides[1] = {0};
    const uint64_t* strides = e->global_strides.empty() ? no_strides : e->global_strides.data();
    CUresult r = driver().cuTensorMapEncodeTiled(
        &out[j], e->data_type, e->rank, reinterpret_cast<void*>(pointers[i]), e->global_dim.data(),
        strides, e->box_dim.data(), e->element_strides.data(), e->interleave, e->swizzle,
        e->l2_promotion, e->oob_fill);
    if (r) {
      error_ = "encoding tensor map " + m.name + ": " + message(r);
      return false;
    }
  }
  return true;
}

std::unique_ptr<DeviceKernel> DeviceKernel::prepare(CudaSession& session,
                                                    const EmittedSource& source,
                                                    std::vector<HostLaunch> launches,
                                                    std::vector<LaunchArg>& args, std::string* why,
                                                    double* compile_seconds) {
  std::unique_ptr<DeviceKernel> k(new DeviceKernel(session, args));
  k->launches_ = std::move(launches);
  auto failed = [&] {
    if (why) *why = session.last_error();
    return nullptr;
  };
  k->functions_ = session.load(source, k->launches_, compile_seconds);
  if (k->functions_.empty()) return failed();
  k->pointers_.assign(args.size(), 0);
  std::vector<void*> arguments;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    shapes.push_back(args[i].shape);
    if (args[i].is_scalar) {
      arguments.push_back(&args[i].scalar);
      continue;
    }
    k->pointers_[i] = session.alloc(args[i].bytes);
    if (!k->pointers_[i]) return failed();
    arguments.push_back(&k->pointers_[i]);
  }
  if (!k->upload()) return failed();
  k->maps_.resize(k->launches_.size());
  for (size_t l = 0; l < k->launches_.size(); ++l) {
    if (!session.encode_tensor_maps(source, k->launches_[l].tensor_maps, k->pointers_, shapes,
                                    k->maps_[l]))
      return failed();
  }
  for (std::vector<CudaSession::TensorMapBytes>& maps : k->maps_) {  // no map moves after this
    std::vector<void*>& p = k->params_.emplace_back(arguments);
    for (CudaSession::TensorMapBytes& m : maps) p.push_back(&m);
  }
  return k;
}

DeviceKernel::~DeviceKernel() {
  for (uint64_t p : pointers_) s_.free(p);
}

bool DeviceKernel::upload() {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!args_[i].is_scalar && !s_.upload(pointers_[i], args_[i].data, args_[i].bytes))
      return false;
  }
  return true;
}

bool DeviceKernel::download() {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!args_[i].is_scalar && !s_.download(args_[i].data, pointers_[i], args_[i].bytes))
      return false;
  }
  return true;
}

bool DeviceKernel::fill(size_t i, uint8_t byte) {
  return s_.fill(pointers_[i], byte, args_[i].bytes);
}

double DeviceKernel::run() { return s_.launch(functions_, launches_, params_); }

GpuRunResult run_on_cuda(const EmittedSource& source, const GpuLaunch& launch,
                         std::vector<LaunchArg>& args) {
  GpuRunResult out;
  // The launches' shapes and tensor maps' encodings first: a grid or a map the driver would
  // refuse is refused before any work (prepare encodes the maps again over the device copies).
  const std::vector<HostLaunch> launches = host_launches(source, launch.grids);
  for (const HostLaunch& l : launches) {
    for (const TensorMapArg& m : l.tensor_maps) {
      auto it = std::find(source.arguments.begin(), source.arguments.end(), m.tensor);
      const size_t i = static_cast<size_t>(it - source.arguments.begin());
      if (it == source.arguments.end() || i >= args.size() || args[i].is_scalar) {
        out.unavailable = "tensor map " + m.name + " names '" + m.tensor +
                          "', which is not a tensor argument of the kernel";
        return out;
      }
      if (!encode_tensor_map(m.tensor, m.dtype, args[i].shape, m.box, m.swizzle, &out.unavailable))
        return out;
    }
  }
  std::unique_ptr<CudaSession> s = CudaSession::open(&out.unavailable);
  if (!s) return out;
  out.device = s->device();
  out.arch = find_target(s->target()).arch;
  std::unique_ptr<DeviceKernel> k =
      DeviceKernel::prepare(*s, source, launches, args, &out.unavailable, &out.compile_seconds);
  if (!k) return out;
  const size_t flush_bytes = size_t{256} << 20;  // larger than any L2 (H100: 50 MB)
  uint64_t flush = launch.flush_l2 ? s->alloc(flush_bytes) : 0;
  auto failed = [&] {
    out.unavailable = s->last_error();
    s->free(flush);
    return out;
  };
  for (int run = 0; run < launch.warmup + launch.repeats; ++run) {
    // Every run starts from the host's tensors: a kernel that accumulates into its output
    // (split-K's atomics) or updates a tensor in place would otherwise see the last run's values.
    if (run > 0 && !k->upload()) return failed();
    if (flush) s->fill(flush, static_cast<uint8_t>(run), flush_bytes);
    double ms = k->run();
    if (ms < 0) return failed();
    if (run >= launch.warmup) out.kernel_ms.push_back(ms);
  }
  if (!k->download()) return failed();
  s->free(flush);
  out.ran = true;
  return out;
}

}  // namespace tessel
