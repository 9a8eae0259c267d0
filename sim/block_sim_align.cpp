// The alignment detector: an instruction that moves a fixed number of bytes per lane (cp.async 4,
// 8 or 16; an ldmatrix row of 16; a vector load or store) needs each lane's address to be a
// multiple of that size. Buffers start aligned (global ones at 256 bytes, shared ones at 128), so
// the byte offset of the lane's first element in its buffer decides.
#include <algorithm>
#include <bit>

#include "sim/block_sim.h"

namespace tessel::sim {

void BlockSim::check_alignment(const WarpRequest& req, const Resolved& r, const BufferDesc& d) {
  for (uint64_t m = r.ok; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    int64_t offset = d.address(r.flat[lane]) - d.base;
    if (d.address(r.flat[lane]) % req.align != 0) misaligned(req, lane, offset, req.align, false);
  }
}

void BlockSim::misaligned(const WarpRequest& req, int lane, int64_t offset, int width,
                          bool benign) {
  const BufferDesc& d = buffer(req.buffer);
  const int t = req.first_thread + lane;
  findings_.add(FindingKind::kMisaligned, benign, d.name, req.site, -1, [&] {
    Finding f;
    f.element = d.index_string(offset * 8 / std::max(1, d.element_bits()));
    f.threads = {t};
    f.blocks = {block_index_};
    f.address = offset;
    f.width = width;
    std::string what = "misaligned " + std::to_string(width) + "-byte access: " + thread_words(t) +
                       " of block " + block_string(block_index_) + ", " + site_words(req.site) +
                       ", starts at " + d.name + f.element + ", byte " + std::to_string(offset) +
                       " of " + d.name + ", not a multiple of " + std::to_string(width);
    f.message = benign ? what +
                             "; the T.vectorized run is issued as scalar accesses, not as one "
                             "vector (start it at an element whose byte offset is a multiple "
                             "of " +
                             std::to_string(width) + " to get the vector)"
                       : what +
                             "; on a GPU this faults (misaligned address). Start every lane "
                             "at a multiple of " +
                             std::to_string(width) + " bytes, or move fewer bytes per instruction";
    return f;
  });
}

}  // namespace tessel::sim
