// Every buffer access of a statement, in one walk: loads, stores, the buffer operands of
// intrinsic calls (with whether the instruction writes them, and whether it is an atomic), and
// the regions tile operators read and write. The passes that reason about who touches what
// (layout inference, barriers, pipelining) filter this list instead of walking the IR themselves.
#pragma once

#include <functional>
#include <map>
#include <set>
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

/// The buffers a statement reads and writes, by node, with their handles.
struct ReadsWrites {
  std::set<const BufferNode*> reads, writes;
  std::map<const BufferNode*, Buffer> buffers;
};

/// reads/writes of `s`, keeping the buffers `keep` accepts (every buffer when empty).
ReadsWrites reads_writes(const Stmt& s, const std::function<bool(const Buffer&)>& keep = {});

}  // namespace tessel
