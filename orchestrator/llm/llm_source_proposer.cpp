#include "orchestrator/llm/llm_source_proposer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "kernels/external/export_source.hpp"
#include "kernels/external/kernel_source.hpp"
#include "kernels/external/sandbox.hpp"
#include "kernels/family.hpp"
#include "sim/program.hpp"
#include "skills/targets/source_target.hpp"

namespace autotune::orchestrator::llm {

namespace {

using Json = nlohmann::json;

constexpr std::size_t kApiSummaryLimit = 24000;

constexpr const char* kSystemPrompt =
    "You write kernels for a simulated NeuronCore against autotune's NKI-like C++ kernel API. Write ONE "
    "complete C++ source file that declares exactly one kernel with AUTOTUNE_USER_KERNEL, sets kernel.family "
    "to the goal's kernel family (so it is verified against that family's reference; do not give a "
    "reference of your own) and computes the same result faster than the current best. Declare every "
    "tunable parameter in kernel.params with its domain, a default and its role (ParamRole::tile, unroll, "
    "block, pipeline_depth, placement or none); the kernel is measured at the defaults. Answer with a JSON "
    "object {\"source\": \"<the whole file>\", \"rationale\": \"<one "
    "sentence>\"} or with the file in one ```cpp fenced block.";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The headers a user kernel is written against, from the located API.
std::string api_summary() {
  std::string out;
  try {
    const auto api = kernels::external::locate_kernel_api();
    for (const char* header : {"kernels/external/user_kernel.hpp", "kernels/api/kernel.hpp"}) {
      for (const auto& dir : api.include_dirs) {
        const auto path = dir / header;
        if (!std::filesystem::is_regular_file(path)) continue;
        out += "// ---- " + std::string(header) + " ----\n" + read_text(path) + "\n";
        break;
      }
    }
  } catch (const UserError&) {
    return "";
  }
  if (out.size() > kApiSummaryLimit) out = out.substr(0, kApiSummaryLimit) + "\n// (truncated)\n";
  return out;
}

// The best configuration as the standalone source `autotune export` writes;
// "" when its variant has no exportable template.
std::string best_source(const orchestrator::Goal& goal, const skills::Candidate& best, const Json& metrics) {
  try {
    const auto& family = kernels::family_registry().get(goal.family);
    const auto& variant = family.variant(best.variant);
    const auto dtype = sim::parse_dtype(goal.dtype);
    if (!dtype) return "";
    kernels::ParamValues params;
    for (const auto& [name, value] : best.params.items())
      if (value.is_number_integer()) params[name] = value.get<std::int64_t>();
    kernels::external::ExportProvenance provenance;
    provenance.run = "the current best (goal " + goal.name + ")";
    provenance.target = goal.target.name;
    provenance.metrics = metrics;
    return kernels::external::export_source(
        family, variant, goal.shape, *dtype, params,
        kernels::external::export_kernel_name(goal.family, best.variant, "best"), provenance);
  } catch (const UserError&) {
    return "";
  }
}

SourceProposal reject(SourceProposal proposal, std::string reason) {
  proposal.status = "rejected";
  proposal.reason = std::move(reason);
  return proposal;
}

}  // namespace

std::vector<ChatMessage> kernel_source_prompt(const SourceProposalRequest& request, const std::string& source,
                                              const std::string& api) {
  const orchestrator::Goal& goal = *request.goal;
  Json findings = Json::array();
  for (const auto& f : request.analysis.findings)
    findings.push_back({{"kind", f.kind}, {"summary", f.summary}, {"suggested_action", f.action}});
  Json context = {{"kernel_family", goal.family},
                  {"shape", goal.shape},
                  {"dtype", goal.dtype},
                  {"target", goal.target.name},
                  {"objective", orchestrator::to_string(goal.objective)},
                  {"best",
                   {{"variant", request.best.variant},
                    {"params", request.best.params},
                    {"metrics", request.best_metrics}}},
                  {"analysis_of_best", {{"bound", request.analysis.bound}, {"findings", findings}}}};
  std::string user = "Goal and current best (JSON):\n" + context.dump(1) + "\n\n";
  user += "The kernel API (headers):\n```cpp\n" + api + "```\n\n";
  if (!source.empty())
    user += "The current best as a standalone kernel source:\n```cpp\n" + source + "```\n\n";
  user += "Write the new kernel source.";
  return {{"system", kSystemPrompt}, {"user", user}};
}

std::optional<std::string> extract_kernel_source(const std::string& reply, std::string& reason) {
  const ExtractedJson json = extract_json_object(reply);
  if (json.object && json.object->contains("source") && (*json.object)["source"].is_string()) {
    const std::string source = (*json.object)["source"].get<std::string>();
    if (source.find("AUTOTUNE_USER_KERNEL") != std::string::npos) return source;
  }
  for (std::size_t open = reply.find("```"); open != std::string::npos;) {
    const auto line_end = reply.find('\n', open + 3);
    if (line_end == std::string::npos) break;
    const auto close = reply.find("```", line_end + 1);
    if (close == std::string::npos) break;
    const std::string block = reply.substr(line_end + 1, close - line_end - 1);
    if (block.find("AUTOTUNE_USER_KERNEL") != std::string::npos) return block;
    open = reply.find("```", close + 3);
  }
  reason =
      "the reply holds no kernel source (a {\"source\": ...} object or a fenced block declaring "
      "AUTOTUNE_USER_KERNEL)";
  return std::nullopt;
}

SourceProposal LlmSourceProposer::propose(const SourceProposalRequest& request) {
  AUTOTUNE_CHECK(request.goal != nullptr, "a source proposal needs the goal");
  const orchestrator::Goal& goal = *request.goal;
  SourceProposal proposal;
  proposal.decision.action = "propose_source";
  proposal.decision.inputs = {{"best", request.best.text()}, {"findings", request.analysis.findings.size()}};

  const std::string source = best_source(goal, request.best, request.best_metrics);
  const auto messages = kernel_source_prompt(request, source, api_summary());
  const Consultation consultation = advisor_.consult(request.run, messages, request.wall_time_left_s);
  proposal.prompt_hash = consultation.prompt_hash;
  proposal.decision.evidence = {
      {"llm", {{"prompt_hash", consultation.prompt_hash}, {"source", to_string(consultation.source)}}}};
  auto finish = [&](SourceProposal p) {
    if (consultation.source != Consultation::Source::skipped)
      p.llm_call = advisor_.record(request.run, consultation, p.status == "accepted", p.reason);
    if (p.llm_call) p.decision.evidence["llm"]["call"] = *p.llm_call;
    p.decision.evidence["llm"]["status"] = p.status;
    if (p.status == "screened_out") {
      p.decision.rationale =
          "the LLM's kernel source " + p.kernel_name + " was not measured on the device: " + p.reason;
      p.decision.outcome = "not measured on the device: left out by the screen";
      return p;
    }
    if (p.status == "accepted") {
      p.decision.proposer = advisor_.proposer();
      p.decision.rationale = "the LLM's kernel source " + p.kernel_name +
                             " compiled and verified against the " + goal.family + " reference";
    } else {
      p.decision.rationale = "the LLM's kernel source was not used: " + p.reason;
    }
    p.decision.outcome = p.status == "accepted" ? "accepted" : "rejected";
    return p;
  };

  if (consultation.source == Consultation::Source::skipped) {
    proposal.status = "skipped";
    proposal.reason = consultation.error;
    return finish(std::move(proposal));
  }
  if (!consultation.answered()) {
    proposal.status = "unanswered";
    proposal.reason = consultation.error;
    return finish(std::move(proposal));
  }
  std::string reason;
  const auto text = extract_kernel_source(consultation.content, reason);
  if (!text) return finish(reject(std::move(proposal), "malformed reply: " + reason));

  // The source goes to a file of its own (the source target compiles files),
  // made with mkstemps: a name another local user planted in the temporary
  // folder (a symbolic link) is never opened, and so never written through.
  std::string name = (std::filesystem::temp_directory_path() /
                      ("autotune-llm-" + consultation.prompt_hash.substr(0, 16) + "-XXXXXX.cc"))
                         .string();
  const int fd = ::mkstemps(name.data(), 3);
  if (fd < 0)
    return finish(reject(std::move(proposal), "cannot write the source to the temporary folder: " +
                                                  std::string(std::strerror(errno))));
  ::fchmod(fd, 0644);  // the sandboxed compiler runs as another user
  ::close(fd);
  const std::filesystem::path file = name;
  {
    std::ofstream out(file, std::ios::trunc);
    out << *text;
  }
  skills::SourceTargetConfig config;
  config.source = file;
  config.shape = goal.shape;
  config.dtype = goal.dtype;
  config.target = goal.target.name;
  config.tolerance = goal.tolerance;
  config.verification_seed = goal.verification_seed;
  config.worker.timeout_s = request.worker_timeout_s;
  config.compile.timeout_s = request.worker_timeout_s;  // the compiler is no less untrusted (an include bomb)
  // Generated code: compiled and run in the sandbox, unless the goal opted
  // out where none can be made (parse_llm_config refuses otherwise).
  const bool sandboxed = !kernels::external::sandbox_unavailable().has_value();
  config.compile.sandboxed = sandboxed;
  config.worker.sandboxed = sandboxed;
  // The source is compiled by now (or failed to be): its file goes, also when building throws.
  std::unique_ptr<skills::SourceTarget> target;
  try {
    target = std::make_unique<skills::SourceTarget>(config);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
    throw;
  }
  std::filesystem::remove(file);
  const auto& kernel = target->kernel();
  proposal.kernel_name = target->family().variants.front().name;
  proposal.source_hash = kernel.source_hash;
  proposal.source_path = kernel.source_path;
  skills::MeasureOptions options;
  options.deadline_s = request.worker_timeout_s;
  if (!target->built()) {
    // A failed candidate like any other: its trial holds the compiler's message.
    proposal.measurement = target->measure({proposal.kernel_name, proposal.params}, options);
    proposal.decision.evidence["kernel"] = {{"name", proposal.kernel_name},
                                            {"source_hash", proposal.source_hash},
                                            {"source_path", proposal.source_path.string()},
                                            {"status", to_string(proposal.measurement->status)},
                                            {"error", kernel.error}};
    return finish(reject(std::move(proposal),
                         (kernel.compiled ? "cannot be loaded: " : "does not build: ") + kernel.error));
  }
  if (kernel.descriptor.family != goal.family || kernel.descriptor.own_reference)
    return finish(
        reject(std::move(proposal),
               "the kernel must declare family '" + goal.family +
                   "' without a reference of its own (it "
                   "declares " +
                   (kernel.descriptor.family.empty() ? "none" : "'" + kernel.descriptor.family + "'") +
                   (kernel.descriptor.own_reference ? " with its own reference" : "") + ")"));
  for (const auto& p : kernel.descriptor.params) proposal.params[p.name] = p.default_value;
  if (request.screen) {
    // Simulated on the screen's target first, like any candidate of a screened run.
    skills::SourceTargetConfig screen_config = config;
    screen_config.target = request.screen->target();
    skills::SourceTarget on_screen(screen_config, kernel);
    const skills::Measurement simulated = on_screen.measure({proposal.kernel_name, proposal.params}, options);
    SourceScreenVerdict verdict = request.screen->judge(simulated);
    proposal.decision.evidence["screen"] = verdict.evidence;
    if (!verdict.measure) {
      proposal.decision.evidence["kernel"] = {{"name", proposal.kernel_name},
                                              {"source_hash", proposal.source_hash},
                                              {"source_path", proposal.source_path.string()}};
      proposal.status = "screened_out";
      proposal.reason = verdict.reason;
      return finish(std::move(proposal));
    }
  }
  proposal.measurement = target->measure({proposal.kernel_name, proposal.params}, options);
  proposal.decision.evidence["kernel"] = {{"name", proposal.kernel_name},
                                          {"source_hash", proposal.source_hash},
                                          {"source_path", proposal.source_path.string()},
                                          {"status", to_string(proposal.measurement->status)},
                                          {"metrics", proposal.measurement->metrics},
                                          {"verification", proposal.measurement->verification}};
  if (proposal.measurement->status != Outcome::ok)
    return finish(reject(
        std::move(proposal),
        "measured " + std::string(to_string(proposal.measurement->status)) +
            (proposal.measurement->error.empty() ? std::string() : ": " + proposal.measurement->error)));
  proposal.status = "accepted";
  return finish(std::move(proposal));
}

}  // namespace autotune::orchestrator::llm
