// Block storage for the thread-level interpreter and the warp-wide load/store path: every access
// is resolved (bounds) and observed (counters, detectors) by sim/ — inside a T.vectorized loop,
// observed when the loop ends (thread_vector.cpp) — and reads or writes the cells of the lanes
// that are in bounds.
#include <Eigen/Core>
#include <bit>
#include <cstring>

#include "interp/thread_exec.h"

namespace tessel::thread_detail {

uint64_t BlockExec::global_cell(int buffer, int64_t flat) const {
  const Storage& s = storage_[buffer];
  if (s.direct == 1) {  // decode(f16) of HostTensor::at
    uint16_t bits;
    std::memcpy(&bits, s.tensor->data() + flat * 2, 2);
    double v = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
    return std::bit_cast<uint64_t>(v);
  }
  if (s.direct == 2) {  // decode(f32)
    float f;
    std::memcpy(&f, s.tensor->data() + flat * 4, 4);
    return std::bit_cast<uint64_t>(static_cast<double>(f));
  }
  double v = s.tensor->at(flat);
  return s.is_float ? std::bit_cast<uint64_t>(v) : static_cast<uint64_t>(static_cast<int64_t>(v));
}

void BlockExec::set_global_cell(int buffer, int64_t flat, uint64_t cell) {
  Storage& s = storage_[buffer];
  s.tensor->set(flat, s.is_float ? std::bit_cast<double>(cell)
                                 : static_cast<double>(static_cast<int64_t>(cell)));
}

void BlockExec::load(const WarpState& w, int buffer, int site, uint64_t mask,
                     const std::array<const int64_t*, 8>& index, LaneValues& out) {
  sim::WarpRequest req;
  req.buffer = buffer;
  req.access = sim::Access::kLoad;
  req.site = site;
  req.mask = mask;
  req.warp = w.id;
  req.first_thread = w.first_thread;
  req.index = index;
  sim::Resolved r = sim_.resolve(req);
  const sim::Space space = launch_.prog.buffers[buffer].space;
  for_lanes(mask, [&](int l) {
    if (!((r.ok >> l) & 1)) {
      out.i[l] = 0;  // 0 and +0.0 share their bits
      return;
    }
    out.i[l] = static_cast<int64_t>(space == sim::Space::kGlobal
                                        ? global_cell(buffer, r.flat[l])
                                        : cell(buffer, w.first_thread + l, r.flat[l]));
  });
  present(req, r);
}

void BlockExec::store(const WarpState& w, int buffer, int site, uint64_t mask,
                      const std::array<const int64_t*, 8>& index, const LaneValues& values) {
  sim::WarpRequest req;
  req.buffer = buffer;
  req.access = sim::Access::kStore;
  req.site = site;
  req.mask = mask;
  req.warp = w.id;
  req.first_thread = w.first_thread;
  req.index = index;
  sim::Resolved r = sim_.resolve(req);
  const sim::Space space = launch_.prog.buffers[buffer].space;
  uint64_t same = 0;
  // Lanes write in lane order, so of two lanes writing one element the higher one wins.
  for_lanes(r.ok, [&](int l) {
    uint64_t v = static_cast<uint64_t>(values.i[l]);
    if (space == sim::Space::kGlobal) {
      if (global_cell(buffer, r.flat[l]) == v) same |= uint64_t{1} << l;
      set_global_cell(buffer, r.flat[l], v);
    } else {
      uint64_t& c = cell(buffer, w.first_thread + l, r.flat[l]);
      if (c == v) same |= uint64_t{1} << l;
      c = v;
    }
  });
  present(req, r, same);
}

void BlockExec::present(const sim::WarpRequest& req, const sim::Resolved& r, uint64_t same) {
  if (vectors_.active()) {
    vectors_.hold(req, r, same, static_cast<int>(sim_.buffer(req.buffer).shape.size()));
  } else {
    sim_.observe(req, r, same);
  }
}

std::string BlockExec::where(int thread) const {
  return "kernel '" + launch_.prog.kernel->name + "', block " + sim::block_string(block_index_) +
         ", thread " + std::to_string(thread);
}

}  // namespace tessel::thread_detail
