// The CUDA runner: compiles generated source with nvcc, loads the cubin with the CUDA driver API,
// runs the kernel on the GPU and copies the tensors back. The driver (libcuda.so.1) is opened at
// run time, so Tessel builds and runs everywhere and the runner says plainly when a machine has
// no driver or no GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "codegen/host_launch.h"

namespace tessel {

/// One kernel argument: a tensor (host bytes, copied in and back) or an int scalar.
struct LaunchArg {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  bool is_scalar = false;
  int scalar = 0;
  /// A tensor's shape (outermost first): the runner encodes its TMA tensor maps from it.
  std::vector<int64_t> shape = {};
};

struct GpuLaunch {
  /// The block-index extents of each launch, in launch order (launch_grids: one for most
  /// kernels, one per T.Kernel launch for a kernel of several).
  std::vector<std::vector<int64_t>> grids;
  int warmup = 0;   ///< untimed runs before the timed ones
  int repeats = 1;  ///< timed runs (each one every launch of the kernel)
  /// Write 256 MB before every run, so the run starts with a cold L2 cache.
  bool flush_l2 = false;
};

struct GpuRunResult {
  bool ran = false;
  std::string unavailable;  ///< why it did not run (no driver, no device, compile error)
  std::string device;       ///< "NVIDIA H100 80GB HBM3 (sm_90)"
  std::string arch;         ///< "sm_90a"
  double compile_seconds = 0;
  std::vector<double> kernel_ms;  ///< one per timed run
};

/// The target to lower for on the first CUDA device ("sm80" or "sm90"), or "" with `why` set.
std::string cuda_device_target(std::string* why);

/// The first CUDA device, for programs that keep data on it (benchmarks): device memory, a
/// compiled kernel, launches timed with CUDA events. Every call that can fail returns false and
/// sets `error` (last_error()).
class CudaSession {
 public:
  /// nullptr with `why` set when there is no driver or device (or it is older than sm_80).
  static std::unique_ptr<CudaSession> open(std::string* why);
  ~CudaSession();

  const std::string& device() const { return device_; }
  const std::string& target() const { return target_; }  ///< "sm80" or "sm90"
  const std::string& last_error() const { return error_; }

  uint64_t alloc(size_t bytes);  ///< 0 on failure
  void free(uint64_t ptr);
  bool upload(uint64_t dst, const void* src, size_t bytes);
  bool download(void* dst, uint64_t src, size_t bytes);
  bool fill(uint64_t dst, uint8_t byte, size_t bytes);

  /// Compiles (nvcc) and loads `source`: the function of each of `launches` (host_launches), in
  /// order, each allowed its dynamic shared memory. Empty on failure.
  std::vector<void*> load(const EmittedSource& source, const std::vector<HostLaunch>& launches,
                          double* compile_seconds);
  /// Launches `launches[i]` with `functions[i]` and `params[i]` for every i, in order on the
  /// default stream, and waits: their time together in ms (CUDA events), or a negative value on
  /// failure (last_error() names the launch).
  double launch(const std::vector<void*>& functions, const std::vector<HostLaunch>& launches,
                std::vector<std::vector<void*>>& params);
  /// Times `fn` (which launches work on the default stream) with CUDA events, in ms.
  double time(const std::function<void()>& fn);

  /// A CUtensorMap: 128 opaque bytes, 64-byte aligned, passed to the kernel by value.
  struct alignas(64) TensorMapBytes {
    uint64_t opaque[16];
  };
  /// Encodes the TMA tensor maps `maps` (a launch's, which the kernel function takes after its
  /// arguments) with the driver's cuTensorMapEncodeTiled over device tensors: `pointers` and
  /// `shapes` (outermost first) give each of source.arguments (0 and {} for a scalar). Push
  /// `&out[j]` after the arguments' parameters. False with last_error() set when a map cannot be
  /// made (names the map and the rule).
  bool encode_tensor_maps(const EmittedSource& source, const std::vector<TensorMapArg>& maps,
                          const std::vector<uint64_t>& pointers,
                          const std::vector<std::vector<int64_t>>& shapes,
                          std::vector<TensorMapBytes>& out);

 private:
  CudaSession() = default;
  std::string device_, target_, error_;
  int dev_ = 0;
  std::vector<void*> modules_;
};

/// A kernel on a session, ready to run: loaded, a device copy of each tensor argument, and every
/// launch's parameters (the arguments, then its tensor maps encoded over the device copies).
class DeviceKernel {
 public:
  /// Loads `source` for `launches` (host_launches) and uploads the tensors of `args`, which
  /// must outlive the DeviceKernel (download() writes into them). Null with `why` set on
  /// failure.
  static std::unique_ptr<DeviceKernel> prepare(CudaSession& session, const EmittedSource& source,
                                               std::vector<HostLaunch> launches,
                                               std::vector<LaunchArg>& args, std::string* why,
                                               double* compile_seconds = nullptr);
  ~DeviceKernel();
  DeviceKernel(const DeviceKernel&) = delete;
  DeviceKernel& operator=(const DeviceKernel&) = delete;

  bool upload();    ///< every tensor argument from its host bytes
  bool download();  ///< every tensor argument back into its host bytes
  /// Sets every byte of tensor argument `i` on the device to `byte`.
  bool fill(size_t i, uint8_t byte);
  /// Runs every launch in order and waits: the time in ms, negative on failure
  /// (session's last_error()).
  double run();

 private:
  explicit DeviceKernel(CudaSession& s, std::vector<LaunchArg>& args) : s_(s), args_(args) {}
  CudaSession& s_;
  std::vector<LaunchArg>& args_;
  std::vector<HostLaunch> launches_;
  std::vector<void*> functions_;
  std::vector<uint64_t> pointers_;                              ///< per argument; 0 for a scalar
  std::vector<std::vector<CudaSession::TensorMapBytes>> maps_;  ///< per launch
  std::vector<std::vector<void*>> params_;                      ///< per launch
};

/// Compiles `source` (CUDA) for the first device, runs it (every launch, in order)
/// `warmup + repeats` times with `args` (every run from the host's bytes: the tensors are
/// uploaded again before each, untimed), and copies every tensor argument back into its host
/// bytes after the last run. Each launch's TMA tensor maps are encoded with the driver's
/// cuTensorMapEncodeTiled (codegen/tensor_map_encoding.h) over the device copies of their
/// tensors. A kernel of several launches takes its scratch tensors among `args`, in
/// source.arguments order.
GpuRunResult run_on_cuda(const EmittedSource& source, const GpuLaunch& launch,
                         std::vector<LaunchArg>& args);

}  // namespace tessel
