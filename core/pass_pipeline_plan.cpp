// Pass plan_pipelines: the schedule of every T.Pipelined loop (the paper's §4.4). Each statement
// of the loop body gets a stage and a position (order): the user's lists, or the defaults of
// core/pipeline_schedule.h (producer copies first, stage 0; the rest num_stages - 1 iterations
// later), checked against the body's dependencies by the same validation the loop's
// construction ran. Loops with num_stages <= 1 stay as they are (a plain serial loop).
#include "core/passes.h"
#include "core/pipeline_schedule.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

class Planner : public StmtMutator {
 public:
  explicit Planner(std::string kernel) : kernel_(std::move(kernel)) {}

 protected:
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    Stmt m = StmtMutator::visit_For(op, s);
    const auto* f = m.as<ForNode>();
    if (f->for_kind != ForKind::kPipelined || f->pipeline.num_stages <= 1) return m;
    std::vector<Stmt> body = pipeline_statements(f->body);
    PipelineInfo plan = complete_pipeline_schedule(body, f->pipeline);
    check_pipeline_schedule("kernel '" + kernel_ + "': T.Pipelined at " + f->loc.str(), body, plan);
    return ForNode::make(f->var, f->min, f->extent, f->for_kind, SeqNode::make(body), f->loc, plan);
  }

 private:
  std::string kernel_;
};

}  // namespace

Kernel plan_pipelines(const Kernel& kernel) {
  return with_body(kernel, Planner(kernel->name).mutate(kernel->body));
}

}  // namespace tessel
