// Buffer construction and validation, and buffer regions.
#include "core/buffer.h"

namespace tessel {

const char* scope_name(Scope scope) {
  switch (scope) {
    case Scope::kGlobal: return "global";
    case Scope::kShared: return "shared";
    case Scope::kSharedDyn: return "shared.dyn";
    case Scope::kFragment: return "local.fragment";
    case Scope::kLocal: return "local";
  }
  return "?";
}

Buffer BufferNode::make(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                        SourceLoc loc) {
  std::string where = loc.known() ? " (at " + loc.str() + ")" : "";
  if (shape.empty()) {
    user_error("buffer '" + name + "'" + where +
               " has no dimensions; give it a shape such as (1,) for a scalar");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    internal_check(shape[d].defined(), "undefined buffer extent");
    if (!shape[d].dtype().is_integral()) {
      user_error("buffer '" + name + "'" + where + ": extent of dimension " + std::to_string(d) +
                 " is a " + shape[d].dtype().name() + " expression; extents must be integers");
    }
    if (auto c = as_const_int(shape[d]); c && *c <= 0) {
      user_error("buffer '" + name + "'" + where + ": extent of dimension " + std::to_string(d) +
                 " is " + std::to_string(*c) + "; every extent must be positive");
    }
  }
  auto node = std::make_shared<BufferNode>();
  node->name = std::move(name);
  node->shape = std::move(shape);
  node->dtype = dtype;
  node->scope = scope;
  node->loc = std::move(loc);
  return Buffer(std::move(node));
}

std::optional<int64_t> BufferNode::const_size() const {
  int64_t n = 1;
  for (const Expr& e : shape) {
    auto c = as_const_int(e);
    if (!c) return std::nullopt;
    n *= *c;
  }
  return n;
}

void check_indices(const Buffer& buffer, const std::vector<Expr>& indices, const char* what) {
  if (indices.size() != buffer->ndim()) {
    user_error(std::string(what) + " of '" + buffer->name + "' with " +
               std::to_string(indices.size()) + " index(es), but it has " +
               std::to_string(buffer->ndim()) + " dimension(s); give one index per dimension");
  }
  for (size_t d = 0; d < indices.size(); ++d) {
    internal_check(indices[d].defined(), "undefined index");
    if (!indices[d].dtype().is_integral()) {
      user_error(std::string(what) + " of '" + buffer->name + "': index " + std::to_string(d) +
                 " is a " + indices[d].dtype().name() + " expression; indices must be integers");
    }
  }
}

BufferRegion BufferRegion::full(const Buffer& buffer) {
  BufferRegion r{buffer, {}, false};
  for (const Expr& e : buffer->shape) r.ranges.push_back({make_int(0), e});
  return r;
}

std::vector<Expr> BufferRegion::squeezed_extents() const {
  std::vector<Expr> out;
  for (const Range& r : ranges) {
    if (as_const_int(r.extent) != 1) out.push_back(r.extent);
  }
  return out;
}

bool BufferRegion::is_full() const {
  for (size_t d = 0; d < ranges.size(); ++d) {
    if (as_const_int(ranges[d].min) != 0) return false;
    if (!structural_equal(ranges[d].extent, buffer->shape[d])) return false;
  }
  return true;
}

}  // namespace tessel
