#include "strata/runtime/callbacks.h"

#include <fmt/format.h>

#include <cerrno>
#include <nlohmann/json.hpp>

namespace strata {

void ProgressCallback::OnOpStart(const PlannedOp& op) {
  if (!ProgressBar::StderrIsTerminal()) return;
  bars_[op.index] = std::make_unique<ProgressBar>(op.node->op_name, op.num_tasks(),
                                                  op.node->max_block_bytes());
}

void ProgressCallback::OnTaskEnd(const TaskEndEvent& event) {
  auto it = bars_.find(event.op->index);
  if (it != bars_.end()) it->second->Advance();
}

void ProgressCallback::OnOpEnd(const PlannedOp& op) {
  auto it = bars_.find(op.index);
  if (it != bars_.end()) {
    it->second->Finish();
    bars_.erase(it);
  }
}

HistoryCallback::HistoryCallback(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "a");
  if (!file_) status_ = ErrnoToStatus(errno, fmt::format("opening history file {}", path_));
}

HistoryCallback::~HistoryCallback() {
  if (file_) std::fclose(file_);
}

void HistoryCallback::OnComputeStart(const Plan& plan) {
  totals_.clear();
  if (!file_) return;
  nlohmann::json j = {{"event", "compute_start"},
                      {"allowed_mem", plan.spec().allowed_mem},
                      {"total_system_mem", plan.spec().total_system_mem},
                      {"executor", std::string(ExecutorName(plan.spec().executor))},
                      {"workers", plan.spec().workers},
                      {"tasks", plan.total_tasks()}};
  fmt::print(file_, "{}\n", j.dump());
}

void HistoryCallback::OnTaskEnd(const TaskEndEvent& e) {
  OpTotals& t = totals_[e.op->index];
  ++t.tasks;
  t.projected = e.projected_mem;
  t.measured_peak = std::max(t.measured_peak, e.measured_peak);
  t.task_seconds += e.end_seconds - e.start_seconds;
  if (!file_) return;
  nlohmann::json j = {{"event", "task"},
                      {"array", e.op->node->name},
                      {"op", e.op->node->op_name},
                      {"block", e.block},
                      {"start", e.start_seconds},
                      {"end", e.end_seconds},
                      {"projected_mem", e.projected_mem},
                      {"measured_peak", e.measured_peak},
                      {"attempts", e.attempts},
                      {"worker", e.worker}};
  if (e.worker_rss > 0) j["worker_rss"] = e.worker_rss;
  if (e.skipped) j["skipped"] = true;
  if (e.backup) j["backup"] = true;
  fmt::print(file_, "{}\n", j.dump());
}

void HistoryCallback::OnOpEnd(const PlannedOp& op) {
  if (!file_) return;
  const OpTotals& t = totals_[op.index];
  nlohmann::json j = {{"event", "op"},
                      {"array", op.node->name},
                      {"op", op.node->op_name},
                      {"tasks", t.tasks},
                      {"projected_mem", op.projected_mem},
                      {"measured_peak", t.measured_peak},
                      {"task_seconds", t.task_seconds},
                      {"tier", std::string(TierName(op.tier))}};
  fmt::print(file_, "{}\n", j.dump());
}

void HistoryCallback::OnComputeEnd(const Plan& plan, const Status& status,
                                   const ComputeSummary& s) {
  if (!file_) return;
  nlohmann::json j = {{"event", "compute_end"},
                      {"ok", status.ok()},
                      {"error", std::string(status.message())},
                      {"seconds", s.seconds},
                      {"tasks", s.tasks},
                      {"tasks_skipped", s.tasks_skipped},
                      {"peak_pool_bytes", s.peak_pool_bytes},
                      {"intermediate_bytes_written", s.intermediate_bytes_written},
                      {"zarr_bytes_read", s.zarr_bytes_read},
                      {"peak_resident_intermediate_bytes", s.peak_resident_intermediate_bytes},
                      {"backup_attempts", s.backup_attempts},
                      {"backups_won", s.backups_won},
                      {"hung_workers_killed", s.hung_workers_killed}};
  if (!s.rank_peak_pool_bytes.empty()) {
    j["rank_peak_pool_bytes"] = s.rank_peak_pool_bytes;
    j["rank_memory_share"] = s.rank_memory_share;
    j["bytes_between_ranks"] = s.bytes_between_ranks;
  }
  fmt::print(file_, "{}\n", j.dump());
  std::fflush(file_);
}

}  // namespace strata
