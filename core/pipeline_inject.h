// Software pipelining of a lowered T.Pipelined loop: stages shifted by iteration, shared tiles
// multi-buffered, cp.async groups committed and waited for (core/pipeline_inject.cpp explains the
// schedule). Called by lower_tile_ops once the body's statements are lowered one by one.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "core/layout.h"
#include "core/lowering.h"
#include "core/stmt.h"

namespace tessel {

/// One lowered statement of the loop body with its place in the schedule (from plan_pipelines).
struct PipelineGroup {
  Stmt stmt;
  int stage = 0;
  int order = 0;
  Stmt source;  ///< the tile-level statement `stmt` was lowered from (may be undefined)
};

/// Shared buffers given versions, kernel-wide (their allocations change too).
struct PipelineVersions {
  struct Entry {
    Buffer original;
    Buffer versioned;  ///< shape [depth] + original shape
    int depth = 1;
  };
  std::map<const BufferNode*, Entry> buffers;
  /// Shared buffers also accessed outside every pipelined loop (before or after one). Their
  /// versions are numbered so that a loop's last iteration writes version 0, the version those
  /// outside accesses use.
  std::set<const BufferNode*> used_outside;
};

/// The pipelined loop for `loop` (the original T.Pipelined node) from its lowered statements.
/// Records the buffers it versions in `versions`. `drop_wait` leaves out the cp.async wait (a
/// test-only switch: the simulator must then report the reads as async races). `peel`: the
/// caller proved extent > num_stages - 1, so the prologue and epilogue iterations are peeled
/// off and the main loop runs unguarded; otherwise one guarded loop of extent + S iterations.
Stmt inject_pipeline(const ForNode& loop, std::vector<PipelineGroup> groups,
                     PipelineVersions& versions, bool drop_wait, bool peel);

/// Records in `versions` the shared buffers a statement of `groups` writes and a statement of a
/// later stage reads, each given `depth` versions (a user error when another pipeline gave the
/// buffer a different depth).
void version_buffers(const ForNode& loop, const std::vector<PipelineGroup>& groups, int depth,
                     PipelineVersions& versions);

/// `s` with every access of a buffer of `versions` addressed to version `version`.
Stmt version_accesses(const Stmt& s, const PipelineVersions& versions, const Expr& version);

/// The layouts of the versioned buffers replace the originals' in `layouts`.
void add_versioned_layouts(LayoutMap& layouts, const PipelineVersions& versions);

/// Allocations of versioned buffers replaced by the versioned ones; accesses outside the
/// pipelines use version 0 (the last iteration's, see PipelineVersions::used_outside).
Stmt apply_versions(const Stmt& body, const PipelineVersions& versions);

/// The layout of a versioned buffer: version v of element x at v * size + layout(x) (linearised).
Layout versioned_layout(const Layout& layout, int depth);

}  // namespace tessel
