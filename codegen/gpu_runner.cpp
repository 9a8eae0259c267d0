// The CUDA runner over the driver API, opened with dlopen (the few entry points it needs are
// declared here with their documented C signatures, so no CUDA header is needed to build).
#include "codegen/gpu_runner.h"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

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
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);

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
              d.get(d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") && d.get(d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
              d.get(d.cuMemsetD8, "cuMemsetD8_v2") && d.get(d.cuLaunchKernel, "cuLaunchKernel") &&
              d.get(d.cuGetErrorString, "cuGetErrorString");
    if (!ok) return;
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
  if (dev.major < 8) {
    if (why) *why = "the GPU (" + dev.name + ") is older than sm_80; Tessel targets sm80 and sm90";
    return "";
  }
  return dev.major >= 9 ? "sm90" : "sm80";
}

GpuRunResult run_on_cuda(const EmittedSource& source, const GpuLaunch& launch,
                         std::vector<LaunchArg>& args) {
  GpuRunResult out;
  Device dev;
  if (!first_device(dev, &out.unavailable)) return out;
  Driver& d = driver();
  std::string target = cuda_device_target(&out.unavailable);
  if (target.empty()) return out;
  out.arch = target == "sm90" ? "sm_90a" : "sm_80";
  out.device = dev.name + " (sm_" + std::to_string(dev.major) + std::to_string(dev.minor) + ")";

  std::string dir = (std::filesystem::temp_directory_path() / "tessel_gpu").string();
  CompileResult c = compile_device_code(source, find_target(target), dir);
  out.compile_seconds = c.seconds;
  if (!c.compiled) {
    out.unavailable = c.skipped.empty() ? "nvcc failed:\n" + c.log : c.skipped;
    return out;
  }
  std::ifstream f(c.output, std::ios::binary);
  std::vector<char> cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());

  CUcontext ctx = nullptr;
  d.cuDevicePrimaryCtxRetain(&ctx, dev.dev);
  d.cuCtxSetCurrent(ctx);
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  auto fail = [&](const std::string& what, CUresult r) {
    out.unavailable = what + ": " + message(r);
    return out;
  };
  if (CUresult r = d.cuModuleLoadData(&module, cubin.data()); r) return fail("loading the cubin", r);
  if (CUresult r = d.cuModuleGetFunction(&fn, module, source.entry.c_str()); r) {
    return fail("finding " + source.entry, r);
  }
  if (source.dynamic_shared_bytes > 48 * 1024) {
    if (CUresult r = d.cuFuncSetAttribute(fn, kMaxDynamicShared, static_cast<int>(source.dynamic_shared_bytes)); r) {
      return fail("allowing " + std::to_string(source.dynamic_shared_bytes) + " bytes of shared memory", r);
    }
  }
  std::vector<CUdeviceptr> ptrs(args.size(), 0);
  std::vector<void*> params;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_scalar) {
      params.push_back(&args[i].scalar);
      continue;
    }
    if (CUresult r = d.cuMemAlloc(&ptrs[i], std::max<size_t>(args[i].bytes, 1)); r) return fail("cuMemAlloc", r);
    d.cuMemcpyHtoD(ptrs[i], args[i].data, args[i].bytes);
    params.push_back(&ptrs[i]);
  }
  CUdeviceptr flush = 0;
  const size_t flush_bytes = size_t{256} << 20;  // larger than any L2 (H100: 50 MB)
  if (launch.flush_l2) d.cuMemAlloc(&flush, flush_bytes);
  std::vector<int64_t> g = launch.grid;
  g.resize(3, 1);
  for (int run = 0; run < launch.warmup + launch.repeats; ++run) {
    if (flush) d.cuMemsetD8(flush, static_cast<unsigned char>(run), flush_bytes);
    d.cuCtxSynchronize();
    auto start = std::chrono::steady_clock::now();
    CUresult r = d.cuLaunchKernel(fn, g[0], g[1], g[2], source.threads, 1, 1,
                                  static_cast<unsigned>(source.dynamic_shared_bytes), nullptr,
                                  params.data(), nullptr);
    if (r) return fail("launching " + source.entry, r);
    if (CUresult s = d.cuCtxSynchronize(); s) return fail("running " + source.entry, s);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (run >= launch.warmup) out.kernel_ms.push_back(ms);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_scalar) continue;
    d.cuMemcpyDtoH(args[i].data, ptrs[i], args[i].bytes);
    d.cuMemFree(ptrs[i]);
  }
  if (flush) d.cuMemFree(flush);
  d.cuModuleUnload(module);
  out.ran = true;
  return out;
}

}  // namespace tessel
