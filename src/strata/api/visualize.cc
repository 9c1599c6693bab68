#include "strata/api/visualize.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "strata/api/compute.h"
#include "strata/base/byte_size.h"

extern char** environ;

namespace strata {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Runs `dot -T<format> -o <output>` with `text` on its standard input.
Status RunDot(const std::string& text, const std::string& format, const std::string& output) {
  // The DOT text goes through a file beside the output: no pipe to manage,
  // and a failed `dot` leaves the text for the user to look at.
  const std::string dot_path = output + ".dot";
  {
    std::ofstream f(dot_path, std::ios::binary);
    f << text;
    if (!f) return ErrnoToStatus(errno, fmt::format("visualize: writing {}", dot_path));
  }
  std::string t = "-T" + format;
  std::string o = "-o" + output;
  const char* argv[] = {"dot", t.c_str(), o.c_str(), dot_path.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "dot", nullptr, nullptr, const_cast<char* const*>(argv), environ);
  if (rc != 0) {
    std::filesystem::remove(dot_path);
    return UnavailableError(fmt::format(
        "visualize: cannot run Graphviz's `dot` ({}); install graphviz", std::strerror(rc)));
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::error_code ec;
  std::filesystem::remove(dot_path, ec);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return UnknownError(fmt::format("visualize: `dot -T{}` failed writing {} (exit status {})",
                                    format, output, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
  }
  return Status::Ok();
}

}  // namespace

std::string PlanToDot(const Plan& plan) {
  std::string out = "digraph strata {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  const auto& ops = plan.ops();
  for (const PlannedOp& op : ops) {
    const Node& n = *op.node;
    std::string label = fmt::format("{}\\n{}\\nshape {}, {}\\nchunks {}", Escape(n.name),
                                    Escape(n.op_name), ShapeToString(n.shape), n.dtype.name(),
                                    Escape(n.grid.ToString()));
    std::string attrs;
    if (op.materialized) {
      label += fmt::format("\\n{} tasks, {} per task", op.num_tasks(),
                           FormatBytes(op.projected_mem));
      if (op.tier != Tier::kNone) label += fmt::format("\\ntier: {}", TierName(op.tier));
      attrs = op.is_output ? ", style=\"rounded,filled,bold\", fillcolor=\"#dbe9f6\""
                           : ", style=\"rounded,filled\", fillcolor=\"#eeeeee\"";
      attrs += ", shape=box";
    } else if (op.fused_into >= 0) {
      label += fmt::format("\\nfused into {}", Escape(ops[op.fused_into].node->name));
      attrs = ", shape=box, style=dashed";
    } else {
      attrs = ", shape=ellipse";
    }
    out += fmt::format("  \"{}\" [label=\"{}\"{}, tooltip=\"{}\"];\n", Escape(n.name), label,
                       attrs, Escape(op.note.empty() ? op.tier_reason : op.note));
  }
  for (const PlannedOp& op : ops) {
    for (const auto& in : op.node->inputs) {
      out += fmt::format("  \"{}\" -> \"{}\";\n", Escape(in->name), Escape(op.node->name));
    }
  }
  out += "}\n";
  return out;
}

Status visualize(const std::vector<Array>& arrays, const std::string& filename,
                 const PlanOptions& options) {
  const std::string ext = std::filesystem::path(filename).extension().string();
  std::string format;
  if (ext == ".svg" || ext == ".png" || ext == ".pdf" || ext == ".dot") {
    format = ext.substr(1);
  } else {
    return InvalidArgumentError(fmt::format(
        "visualize: {}: the file name must end in .svg, .png, .pdf or .dot", filename));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> p, plan(arrays, options));
  const std::string text = PlanToDot(*p);
  if (format == "dot") {
    std::ofstream f(filename, std::ios::binary);
    f << text;
    if (!f) return ErrnoToStatus(errno, fmt::format("visualize: writing {}", filename));
    return Status::Ok();
  }
  return RunDot(text, format, filename);
}

}  // namespace strata
