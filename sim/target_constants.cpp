#include "sim/target_constants.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/output_file.hpp"
#include "core/text.hpp"

namespace autotune::sim {

namespace fs = std::filesystem;

const std::vector<FittedConstant>& fitted_constants() {
  // Bounds: what a NeuronCore could physically show, wide enough that a fit is
  // never held by them unless the data asks for something implausible (then
  // the constant sits at its bound and the mechanism, not the constant, is
  // what is missing):
  //  - access start-up: the [perf] notes give ~60 cycles per SBUF/PSUM access;
  //    0-200 cycles (a pipeline start-up of a few dozen to a few hundred);
  //  - cross-engine dependency: ~100 cycles of semaphore wait [perf]; 0-400;
  //  - DMA efficiency half-point: the DMA guide's curve (near peak at >= 2 KiB
  //    per partition, overhead-bound under 256 B) puts it in the hundreds of
  //    bytes; at least 256 B, so that a 256 B chunk is at most half efficient
  //    (the documentation's "overhead-bound"), at most 8192 B;
  //  - DMA fixed cost: descriptor and completion, ~1.3 us [perf]; a hardware
  //    DGE instruction alone is ~0.6 us (NKI DGE deep dive); 0.2-4 us;
  //  - launch floor: NEURONCORE.md estimates 10-15 us; the per-call device
  //    floor measured on trn2 through torch-xla is 0.0495 ms
  //    (bbioren/hf-kernels-neuron, results/README.md), which also holds
  //    runtime work around the kernel; 0-60 us;
  //  - SBUF partitions per DGE instruction of a transposing DMA (trn2): the
  //    API's hardware-DGE transpose reads 16 source partitions per
  //    instruction; how the compiler lowers a larger SBUF source is not
  //    documented; 16 (one instruction per 16 partitions) to 128 (one per
  //    transfer).
  static const std::vector<FittedConstant> constants = {
      {"access_startup", "instruction_cycles.access_startup", "cycles", 0, 200,
       "SBUF/PSUM access start-up added to every compute instruction",
       [](const TargetSpec& t) { return t.access_startup_cycles; },
       [](TargetSpec& t, double v) { t.access_startup_cycles = v; }},
      {"cross_engine_dependency", "instruction_cycles.cross_engine_dependency", "cycles", 0, 400,
       "semaphore wait of an instruction on a result of another compute engine",
       [](const TargetSpec& t) { return t.cross_engine_dependency_cycles; },
       [](TargetSpec& t, double v) { t.cross_engine_dependency_cycles = v; }},
      {"dma_fixed_cost", "dma.fixed_cost_us", "us", 0.2, 4,
       "DMA transfer latency: descriptor and completion semaphore",
       [](const TargetSpec& t) { return t.dma_fixed_cost_s * 1e6; },
       [](TargetSpec& t, double v) { t.dma_fixed_cost_s = v * 1e-6; }},
      {"dma_efficiency_half_bytes", "dma.efficiency_half_bytes", "B", 256, 8192,
       "contiguous chunk size at which a DMA queue reaches half its bandwidth",
       [](const TargetSpec& t) { return t.dma_efficiency_half_bytes; },
       [](TargetSpec& t, double v) { t.dma_efficiency_half_bytes = v; }},
      {"launch_overhead", "launch_overhead_us", "us", 0, 60, "fixed floor per kernel launch",
       [](const TargetSpec& t) { return t.launch_overhead_s * 1e6; },
       [](TargetSpec& t, double v) { t.launch_overhead_s = v * 1e-6; }},
      {"dge_partitions_per_instruction", "dma.descriptor_generation.sbuf_partitions_per_instruction",
       "partitions", 16, 128, "SBUF source partitions one DGE instruction of a transposing DMA covers",
       [](const TargetSpec& t) { return t.dge_source_partitions; },
       [](TargetSpec& t, double v) { t.dge_source_partitions = v; },
       [](const TargetSpec& t) { return t.dge_instances > 0; }},
  };
  return constants;
}

const FittedConstant* find_fitted_constant(std::string_view name) {
  for (const auto& c : fitted_constants())
    if (c.name == name || c.key == name) return &c;
  return nullptr;
}

std::string fitted_constant_names() {
  return join(fitted_constants(), ", ", [](const FittedConstant& c) { return std::string(c.name); });
}

const FittedConstant& fitted_constant(std::string_view name) {
  if (const auto* c = find_fitted_constant(name)) return *c;
  throw UserError("unknown fitted constant '" + std::string(name) +
                  "' (accepted: " + fitted_constant_names() + ", or their target-file keys)");
}

std::map<std::string, double> fitted_values(const TargetSpec& target) {
  std::map<std::string, double> out;
  for (const auto& c : fitted_constants())
    if (c.applies_to(target)) out[std::string(c.name)] = c.get(target);
  return out;
}

void set_fitted_values(TargetSpec& target, const std::map<std::string, double>& values) {
  for (const auto& [name, value] : values) fitted_constant(name).set(target, value);
}

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path.string() + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Four significant digits in fixed notation ("2.08", "36", "1280", "0.6"):
// finer than any calibration can tell, and readable in a target file.
std::string format_value(double value) {
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::clamp(3 - magnitude, 0, 9);
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  std::string out = text;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

struct KeyLine {
  std::size_t indent = 0;
  std::string key;
  std::size_t value_begin = 0, value_end = 0;  // the scalar's characters in the line ([begin, end))
  bool has_value = false;
};

// A "key: value  # comment" line of a block mapping; nothing for comments,
// blank lines and anything else.
std::optional<KeyLine> parse_key_line(const std::string& line) {
  KeyLine out;
  out.indent = line.find_first_not_of(' ');
  if (out.indent == std::string::npos || line[out.indent] == '#') return std::nullopt;
  std::size_t i = out.indent;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
  if (i == out.indent || i >= line.size() || line[i] != ':') return std::nullopt;
  out.key = line.substr(out.indent, i - out.indent);
  std::size_t v = line.find_first_not_of(" \t", i + 1);
  if (v == std::string::npos || line[v] == '#') return out;  // a mapping opens here
  std::size_t end = line.find(" #", v);
  end = end == std::string::npos ? line.size() : end;
  while (end > v && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  out.has_value = true;
  out.value_begin = v;
  out.value_end = end;
  return out;
}

// The line with its value replaced by `value`; the comment keeps its column
// where the new value leaves room.
std::string replace_value(const std::string& line, const KeyLine& key, const std::string& value) {
  const std::string rest = line.substr(key.value_end);
  const std::size_t comment = rest.find('#');
  if (comment == std::string::npos) return line.substr(0, key.value_begin) + value;
  const long old_width = static_cast<long>(key.value_end - key.value_begin);
  const long gap = std::max(1L, static_cast<long>(comment) + old_width - static_cast<long>(value.size()));
  return line.substr(0, key.value_begin) + value + std::string(static_cast<std::size_t>(gap), ' ') +
         rest.substr(comment);
}

// Appends a canonical text of `node`: mappings by sorted key, numbers as
// numbers ("1.30" and "1.3" agree), other scalars as written.
void canonical_text(const YAML::Node& node, std::string& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      std::vector<std::pair<std::string, YAML::Node>> items;
      for (const auto& item : node) items.emplace_back(item.first.as<std::string>(), item.second);
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (const auto& [key, value] : items) {
        out += key + ':';
        canonical_text(value, out);
        out += ',';
      }
      out += '}';
      return;
    }
    case YAML::NodeType::Sequence:
      out += '[';
      for (const auto& item : node) {
        canonical_text(item, out);
        out += ',';
      }
      out += ']';
      return;
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      char* end = nullptr;
      const double number = std::strtod(text.c_str(), &end);
      if (!text.empty() && end == text.c_str() + text.size()) {
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "#%.17g", number);
        out += buffer;
      } else {
        out += '"' + text + '"';
      }
      return;
    }
    default:
      out += '~';
  }
}

}  // namespace

void write_fitted_target(const fs::path& source, const std::map<std::string, double>& values,
                         const fs::path& out, const std::string& provenance, std::vector<KeptFile> keep) {
  keep.push_back({source, "the target file it starts from"});
  check_output_path(out, "-o", keep, true);
  // Which key path each value goes to, and its text.
  std::map<std::string, std::pair<const FittedConstant*, std::string>> by_key;
  for (const auto& [name, value] : values) {
    const FittedConstant& c = fitted_constant(name);
    by_key[std::string(c.key)] = {&c, format_value(value)};
  }
  const TargetSpec before = load_target_file(source);
  std::istringstream lines(read_text(source));
  std::vector<std::string> body;
  std::vector<std::pair<std::size_t, std::string>> open;  // (indent, key) of the mappings around the line
  std::map<std::string, int> replaced;
  for (std::string line; std::getline(lines, line);) {
    if (const auto key = parse_key_line(line)) {
      while (!open.empty() && open.back().first >= key->indent) open.pop_back();
      std::string path;
      for (const auto& [indent, name] : open) path += name + ".";
      path += key->key;
      if (!key->has_value) {
        open.emplace_back(key->indent, key->key);
      } else if (const auto it = by_key.find(path); it != by_key.end()) {
        line = replace_value(line, *key, it->second.second);
        ++replaced[path];
      }
    }
    body.push_back(line);
  }
  for (const auto& [key, entry] : by_key)
    if (replaced[key] != 1)
      throw UserError(source.string() + ": " + key + ": " +
                      (replaced[key] == 0 ? "not found as a 'key: value' line" : "written more than once") +
                      "; the fitted target cannot be written");

  std::string text;
  std::istringstream provenance_lines(provenance);
  // single_line: a control character in a measurement's source is shown as \xHH, not copied.
  for (std::string line; std::getline(provenance_lines, line);) text += "# " + single_line(line) + "\n";
  text += "# Fitted from " + source.filename().string() + ":";
  for (const auto& [name, value] : values) {
    const FittedConstant& c = fitted_constant(name);
    text += " " + std::string(c.name) + " " + format_value(c.get(before)) + " -> " +
            by_key[std::string(c.key)].second + " " + std::string(c.unit) + ";";
  }
  text.back() = '\n';
  text += "# Every other line below is " + source.filename().string() + "'s.\n#\n";
  for (const auto& line : body) text += line + "\n";

  // Read back before it replaces anything: the file must give the new values.
  write_output_file(out, text, "-o", keep, [&](const fs::path& written_file) {
    const TargetSpec written = load_target_file(written_file);
    for (const auto& [key, entry] : by_key) {
      const double expected = std::strtod(entry.second.c_str(), nullptr);
      const double got = entry.first->get(written);
      AUTOTUNE_CHECK(std::fabs(got - expected) <= 1e-9 * std::max(1.0, std::fabs(expected)),
                     "the fitted target does not read back " + key + " = " + entry.second);
    }
  });
}

std::string target_content_hash(const TargetSpec& target) {
  std::string canonical = "name:" + target.name + ";";
  if (!target.source_file.empty()) {
    try {
      canonical_text(load_yaml_file(target.source_file), canonical);
    } catch (const std::exception&) {
      canonical += "unreadable:" + target.source_file;  // still distinct from any readable file
    }
  }
  for (const auto& c : fitted_constants()) {
    char buffer[80];
    std::snprintf(buffer, sizeof buffer, ";%s=%.17g", std::string(c.name).c_str(), c.get(target));
    canonical += buffer;
  }
  return stable_hash_hex(canonical);
}

}  // namespace autotune::sim
