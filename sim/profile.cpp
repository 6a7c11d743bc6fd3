// Renderings of a simulation result: text for the CLI, Chrome/Perfetto trace
// JSON, operand and source-location descriptions.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"
#include "sim/simulator.hpp"

namespace autotune::sim {

namespace {

// Source paths are shown relative to the repository when they lie inside it.
std::string short_path(const std::string& file) {
#ifdef AUTOTUNE_SOURCE_ROOT
  const std::string root = std::string(AUTOTUNE_SOURCE_ROOT) + "/";
  if (file.rfind(root, 0) == 0) return file.substr(root.size());
#endif
  return file;
}

std::string view_text(const Program& program, const View& v) {
  const Buffer& b = program.buffer(v.buffer);
  std::string out =
      std::string(memory_space_name(b.space)) + " '" + b.name + "'[" + std::to_string(v.row_begin) + ":" +
      std::to_string(v.row_end) + ", " + std::to_string(v.col_begin) + ":" + std::to_string(v.col_end) +
      "] " + (v.fold > 1 ? "folded x" + std::to_string(v.fold) + " " : "") + std::string(dtype_name(b.dtype));
  return out;
}

std::string format_number(double value, int precision = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", precision, value);
  return buffer;
}

std::string format_time(double seconds) {
  if (seconds >= 1e-3) return format_number(seconds * 1e3, 3) + " ms";
  return format_number(seconds * 1e6, 2) + " us";
}

std::string format_bytes(double bytes) {
  if (bytes >= 1 << 30) return format_number(bytes / double(1 << 30)) + " GiB";
  if (bytes >= 1 << 20) return format_number(bytes / double(1 << 20)) + " MiB";
  if (bytes >= 1 << 10) return format_number(bytes / double(1 << 10)) + " KiB";
  return format_number(bytes, 0) + " B";
}

// The critical-path section: shares of the kernel time, largest first;
// entries under 0.05 % are left out.
std::string format_critical_path(const nlohmann::json& path) {
  std::ostringstream out;
  auto shares = [](const nlohmann::json& object, const std::map<std::string, std::string>& names = {}) {
    std::vector<std::pair<double, std::string>> items;
    for (const auto& [key, value] : object.items())
      if (value.is_number() && value.get<double>() >= 0.05) {
        const auto name = names.find(key);
        items.push_back({value.get<double>(), name == names.end() ? key : name->second});
      }
    std::stable_sort(items.begin(), items.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const std::string text = join(items, ", ", [](const auto& item) {
      return item.second + " " + format_number(item.first, 1) + " %";
    });
    return text.empty() ? std::string("none") : text;
  };
  auto site = [](const nlohmann::json& side) {
    return side.value("engine", "?") + " " + side.value("opcode", "?") + " at " + side.value("source", "?");
  };
  out << "critical path    " << format_time(path.value("length_s", 0.0)) << " through "
      << path.value("instructions", 0)
      << " instructions; shares of the kernel time (busy + waiting = 100 %)\n";
  out << "  busy           " << shares(path["busy_percent"]);
  if (path.value("tensor_transpose_percent", 0.0) >= 0.05)
    out << " (tensor transposes " << format_number(path.value("tensor_transpose_percent", 0.0), 1) << " %)";
  out << "\n";
  out << "  waiting        " << shares(path["waiting_percent"]) << "\n";
  out << "  waits by kind  "
      << shares(path["wait_percent"], {{"semaphore", "semaphore (data)"},
                                       {"buffer", "buffer reuse"},
                                       {"dma_fixed", "DMA fixed cost"},
                                       {"dma_queue", "DMA queue"},
                                       {"dma_descriptor", "DMA descriptor generation"},
                                       {"stationary_load", "stationary load"}})
      << "\n";
  if (path.contains("reached_by_percent"))
    out << "  reached by     "
        << shares(path["reached_by_percent"], {{"engine_order", "engine order"},
                                               {"data", "data dependency"},
                                               {"buffer", "buffer reuse"},
                                               {"start", "kernel start"}})
        << "\n";
  auto share_column = [](double percent) {
    char text[16];
    std::snprintf(text, sizeof text, "%5.1f %%", percent);
    return std::string(text);
  };
  bool first = true;
  for (const auto& link : path.value("links", nlohmann::json::array())) {
    if (link.value("percent", 0.0) < 0.05) continue;
    out << (first ? "  top links    " : "               ") << share_column(link.value("percent", 0.0)) << "  "
        << site(link["waiter"]) << " waits on " << site(link["waits_on"]) << " ("
        << link.value("kind", "data") << ")\n";
    first = false;
  }
  first = true;
  for (const auto& line : path.value("lines", nlohmann::json::array())) {
    if (line.value("percent", 0.0) < 0.05) continue;
    out << (first ? "  top lines    " : "               ") << share_column(line.value("percent", 0.0)) << "  "
        << site(line) << "\n";
    first = false;
  }
  return out.str();
}

}  // namespace

std::string location_text(const Program& program, std::uint32_t location) {
  if (location >= program.locations().size()) return "<unknown location>";
  const SourceLocation& l = program.locations()[location];
  return short_path(l.file) + ":" + std::to_string(l.line);
}

std::string operands_summary(const Program& program, InstructionId instruction) {
  const Instruction& in = program.instructions().at(instruction);
  std::string out = view_text(program, in.dst);
  if (in.accumulate_dst) out += " (+ row sum " + view_text(program, *in.accumulate_dst) + ")";
  out += in.opcode == Opcode::matmul && in.accumulate ? " += " : " <- ";
  for (int s = 0; s < in.src_count; ++s) out += (s ? ", " : "") + view_text(program, in.src[s]);
  if (in.opcode == Opcode::memset) out += std::to_string(in.immediate);
  if (in.opcode == Opcode::iota)
    out += "iota(base " + std::to_string(in.immediate) + ", partition step " +
           std::to_string(in.partition_step) + ", column step " + std::to_string(in.col_step) + ")";
  if (in.opcode == Opcode::dma_copy && in.transpose) out += " (transposed)";
  return out;
}

std::string format_profile_text(const SimResult& result, std::size_t hot_lines) {
  std::ostringstream out;
  if (!result.valid) {
    out << "invalid on " << result.target << ": " << result.rule << ": " << result.error << "\n";
    return out.str();
  }
  const auto& s = result.summary;
  auto number = [&](const char* key) { return s.value(key, 0.0); };
  out << "target           " << result.target << "\n";
  out << "latency          " << format_time(result.total_time_s) << "  (" << result.cycles
      << " cycles; kernel " << format_time(number("kernel_time")) << " + launch "
      << format_time(number("launch_overhead_time")) << ")\n";
  out << "MFU              " << format_number(number("mfu_estimated_percent")) << " %   MBU "
      << format_number(number("mbu_estimated_percent")) << " %\n";
  out << "engine active    tensor " << format_number(number("tensor_engine_active_time_percent"), 1)
      << " %  vector " << format_number(number("vector_engine_active_time_percent"), 1) << " %  scalar "
      << format_number(number("scalar_engine_active_time_percent"), 1) << " %  gpsimd "
      << format_number(number("gpsimd_engine_active_time_percent"), 1) << " %  dma "
      << format_number(number("dma_active_time_percent"), 1) << " %\n";
  out << "instructions     " << s.value("instruction_count", 0) << " (tensor "
      << s.value("tensor_engine_instruction_count", 0) << ", vector "
      << s.value("vector_engine_instruction_count", 0) << ", scalar "
      << s.value("scalar_engine_instruction_count", 0) << ", gpsimd "
      << s.value("gpsimd_engine_instruction_count", 0) << ", dma " << s.value("dma_transfer_count", 0)
      << ")\n";
  out << "DMA              " << s.value("dma_transfer_count", 0) << " transfers, average "
      << format_bytes(number("dma_transfer_average_bytes")) << ", " << s.value("dma_small_transfer_count", 0)
      << " small, efficiency " << format_number(number("dma_average_efficiency_percent"), 1)
      << " %, DMA/compute overlap " << format_number(number("dma_compute_overlap_percent"), 1) << " %\n";
  out << "HBM              read " << format_bytes(number("hbm_read_bytes")) << ", written "
      << format_bytes(number("hbm_write_bytes")) << "\n";
  out << "SBUF peak        " << s.value("sbuf_peak_bytes_per_partition", 0) << " of "
      << s.value("sbuf_usable_bytes_per_partition", 0) << " bytes per partition; PSUM "
      << s.value("psum_peak_banks", 0) << " of " << s.value("psum_banks", 0) << " banks\n";
  if (hot_lines > 0 && !result.hot_lines.empty()) {
    // Busy time is summed over every engine and DMA queue that ran the
    // line's instructions: transfers spread over the 16 queues can be busy
    // longer than the kernel runs, so a share above 100 % is not an error.
    out << "hottest source lines (busy time summed over engines and DMA queues as a share of the kernel time, "
           "so DMA lines on many queues can pass 100 %; busy time; instructions):\n";
    for (std::size_t i = 0; i < std::min(hot_lines, result.hot_lines.size()); ++i) {
      const HotLine& h = result.hot_lines[i];
      out << "  " << format_number(h.percent_of_total, 1) << " %  " << format_time(h.busy_s) << "  "
          << h.instructions << "  " << short_path(h.file) << ":" << h.line << "\n";
    }
  }
  if (s.contains("critical_path") && s["critical_path"].contains("busy_percent"))
    out << format_critical_path(s["critical_path"]);
  return out.str();
}

nlohmann::json perfetto_trace_json(const SimResult& result, const Program& program) {
  constexpr int kPid = 1;
  constexpr int kDmaTidBase = 100;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"pid", kPid},
                    {"name", "process_name"},
                    {"args", {{"name", "NeuronCore (" + result.target + ")"}}}});
  for (int e = 0; e < 4; ++e) {
    const std::string name = std::string(engine_name(static_cast<Engine>(e))) + " engine";
    events.push_back(
        {{"ph", "M"}, {"pid", kPid}, {"tid", e + 1}, {"name", "thread_name"}, {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"},
                      {"pid", kPid},
                      {"tid", e + 1},
                      {"name", "thread_sort_index"},
                      {"args", {{"sort_index", e}}}});
  }
  int queues = 0;
  for (const auto& slice : result.dma_slices) queues = std::max(queues, slice.queue + 1);
  for (const auto& entry : result.timeline)
    if (entry.dma_queue >= 0) queues = std::max(queues, entry.dma_queue + 1);
  for (int q = 0; q < queues; ++q) {
    events.push_back({{"ph", "M"},
                      {"pid", kPid},
                      {"tid", kDmaTidBase + q},
                      {"name", "thread_name"},
                      {"args", {{"name", "dma queue " + std::to_string(q)}}}});
    events.push_back({{"ph", "M"},
                      {"pid", kPid},
                      {"tid", kDmaTidBase + q},
                      {"name", "thread_sort_index"},
                      {"args", {{"sort_index", 10 + q}}}});
  }
  auto args_of = [&](InstructionId id, const TimelineEntry* entry) {
    const Instruction& in = program.instructions()[id];
    nlohmann::json args = {{"instruction", id},
                           {"opcode", std::string(opcode_name(in.opcode))},
                           {"operands", operands_summary(program, id)},
                           {"source", location_text(program, in.location)}};
    if (entry != nullptr) {
      args["dependency_wait_us"] = entry->dependency_wait_s * 1e6;
      if (entry->bytes) args["bytes"] = entry->bytes;
    }
    return args;
  };
  for (const auto& entry : result.timeline) {
    if (entry.engine == Engine::dma) continue;  // drawn per queue below
    events.push_back({{"ph", "X"},
                      {"pid", kPid},
                      {"tid", static_cast<int>(entry.engine) + 1},
                      {"name", std::string(opcode_name(entry.opcode))},
                      {"ts", entry.start_s * 1e6},
                      {"dur", (entry.end_s - entry.start_s) * 1e6},
                      {"args", args_of(entry.instruction, &entry)}});
  }
  for (const auto& slice : result.dma_slices) {
    events.push_back({{"ph", "X"},
                      {"pid", kPid},
                      {"tid", kDmaTidBase + slice.queue},
                      {"name", "dma_copy"},
                      {"ts", slice.start_s * 1e6},
                      {"dur", (slice.end_s - slice.start_s) * 1e6},
                      {"args", args_of(slice.instruction, nullptr)}});
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"simulator", std::string(kSimulatorVersion)},
            {"target", result.target},
            {"total_time_s", result.total_time_s}}}};
}

void write_perfetto_trace(const SimResult& result, const Program& program, const std::string& path) {
  std::ofstream file(path);
  if (!file) throw UserError("cannot write the trace file '" + path + "'");
  file << perfetto_trace_json(result, program).dump();
  if (!file) throw UserError("cannot write the trace file '" + path + "'");
}

}  // namespace autotune::sim
