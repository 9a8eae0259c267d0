// The schedule of a T.Pipelined loop: each statement of its body gets a stage and an order. One
// validation of user-given schedules, run when the loop is built (both levels see it) and again
// by plan_pipelines on the completed schedule.
#pragma once

#include <string>
#include <vector>

#include "core/stmt.h"

namespace tessel {

/// The statements a schedule's lists index: the body's top-level statements.
std::vector<Stmt> pipeline_statements(const Stmt& body);

/// `given` with its missing lists filled in. Default stages: copies from global to shared
/// memory (the producers) stage 0, everything else the last stage (num_stages - 1); default
/// order: by stage, then source order. Lists the user gave are kept as they are.
PipelineInfo complete_pipeline_schedule(const std::vector<Stmt>& body, const PipelineInfo& given);

/// Checks a complete schedule of `body` (user error naming `where`, the statements, the buffers
/// and the fix): one entry per statement in each list, order a permutation, stages in
/// [0, max(num_stages, 1)), no statement before (in stage or order) one it depends on, no
/// register buffer written in one stage and read in another.
void check_pipeline_schedule(const std::string& where, const std::vector<Stmt>& body,
                             const PipelineInfo& plan);

}  // namespace tessel
