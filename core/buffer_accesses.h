// Every buffer access of a statement, in one walk: loads, stores, the buffer operands of
// intrinsic calls (with whether the instruction writes them, and whether it is an atomic), and
// the regions tile operators read and write. The passes that reason about who touches what
// (layout inference, barriers, pipelining) filter this list instead of walking the IR themselves.
#pragma once

#include <vector>

#include "core/stmt.h"

namespace tessel {

struct BufferAccess {
  Buffer buffer;
  std::vector<Expr> indices;  ///< the element accessed; empty for a tile operator's region
  bool write = false;
  bool atomic = false;  ///< an atomic read-modify-write (an intrinsic of the atomic family)
};

/// The accesses of `s` and everything inside it, in no particular order.
std::vector<BufferAccess> buffer_accesses(const Stmt& s);

}  // namespace tessel
