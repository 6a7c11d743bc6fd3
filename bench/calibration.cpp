// Calibration: every public hardware measurement we can write in the kernel
// API (configs/calibration/public.jsonl: the NKI matmul tutorial on trn1, the
// NKI library's attention on trn2, ...), simulated on its target beside the
// latency measured on a Trainium. Per row: source, kernel, shape, target,
// measured and simulated ms, their ratio and whether the fitted constants were
// fitted on it; per source with at least three rows, Kendall's tau between
// the measured and the simulated order; then whether every row is within
// 0.8-1.25, the goal (docs/calibration.md). Rows are simulated in parallel.
//
//   build/bench/bench_calibration [--rows FILE] [--target-file trn1=PATH,trn2=PATH] [--json OUT|-] [--fit]
//
// --fit fits each target's fitted constants on its rows marked fit and prints
// the table before and after (no target file is written; `autotune calibrate`
// writes one). Exit status: 0 when every row is within 0.8-1.25 (after the fit
// with --fit), 1 otherwise, 2 on misuse.
#include "kernels/calibration.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/calibration_fit.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "sim/target_constants.hpp"

using namespace autotune;

namespace {

struct Options {
  std::string rows = std::string(AUTOTUNE_SOURCE_DIR) + "/configs/calibration/public.jsonl";
  std::map<std::string, std::string> target_files;
  std::string json;
  bool fit = false;
};

const char* kUsage =
    "usage: bench_calibration [--rows FILE] [--target-file NAME=PATH[,NAME=PATH]] [--json OUT|-] [--fit]";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UserError(arg + " needs a value; " + kUsage);
      return argv[++i];
    };
    if (arg == "--rows") {
      o.rows = value();
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--fit") {
      o.fit = true;
    } else if (arg == "--target-file") {
      std::stringstream items(value());
      for (std::string item; std::getline(items, item, ',');) {
        const auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
          throw UserError("--target-file '" + item + "': expected NAME=PATH, e.g. trn2=my-trn2.yaml");
        o.target_files[item.substr(0, eq)] = item.substr(eq + 1);
      }
    } else if (arg == "-h" || arg == "--help") {
      std::puts(kUsage);
      std::exit(0);
    } else {
      throw UserError("unknown argument '" + arg + "'; " + kUsage);
    }
  }
  return o;
}

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

void print_table(FILE* out, const std::vector<kernels::CalibrationRow>& rows) {
  std::vector<std::vector<std::string>> cells = {
      {"source", "kernel", "shape", "target", "measured ms", "simulated ms", "ratio", "fitted on", ""}};
  for (const auto& row : rows) {
    const auto& m = row.measurement;
    std::vector<std::string> line = {m.source, m.kernel_text(), m.shape_text() + " " + m.dtype, m.target,
                                     number("%.4g", m.measured_ms)};
    if (row.valid) {
      line.push_back(number("%.4g", row.simulated_ms));
      line.push_back(number("%.2f", row.ratio()));
    } else {
      line.push_back("-");
      line.push_back("-");
    }
    line.push_back(m.fit ? "yes" : "no");
    line.push_back(!row.valid ? row.error : row.in_band() ? "" : "outside 0.8-1.25");
    cells.push_back(line);
  }
  std::fputs(kernels::table_text(cells, {4, 5, 6}).c_str(), out);
}

void print_agreement(FILE* out, const std::vector<kernels::CalibrationRow>& rows) {
  std::fprintf(out,
               "\nKendall's tau between the measured and the simulated order (sources with >= 3 rows):\n");
  for (const auto& s : kernels::agreement_by_source(rows))
    std::fprintf(out, "  %-34s %5.2f  (%d rows)\n", s.source.c_str(), s.tau, s.rows);
}

// Prints the verdict; true when every row is within the band.
bool print_verdict(FILE* out, const std::vector<kernels::CalibrationRow>& rows) {
  int outside = 0;
  for (const auto& row : rows) outside += row.in_band() ? 0 : 1;
  if (outside == 0) {
    std::fprintf(out, "\nevery row within %.2f-%.2f: yes (%zu rows)\n", kernels::kCalibrationLow,
                 kernels::kCalibrationHigh, rows.size());
  } else {
    std::fprintf(out, "\nevery row within %.2f-%.2f: NO (%d of %zu outside)\n", kernels::kCalibrationLow,
                 kernels::kCalibrationHigh, outside, rows.size());
  }
  return outside == 0 && !rows.empty();
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path == "-") {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::ofstream out(path);
  if (!out) throw UserError(path + ": cannot be written");
  out << j.dump(2) << "\n";
}

int run(const Options& o) {
  const auto measurements = kernels::read_measurements(o.rows, true);
  kernels::CalibrationTargets targets;
  for (const auto& [name, path] : o.target_files) targets[name] = sim::load_target_file(path);
  std::set<std::string> names;
  for (const auto& m : measurements) names.insert(m.target);
  for (const auto& name : names)
    if (!targets.count(name)) try {
        targets[name] = sim::load_target(name);
      } catch (const UserError&) {
        // run_calibration reports it on each of the name's rows
      }
  // With --json -, stdout carries the JSON alone.
  FILE* text = o.json == "-" ? stderr : stdout;
  const auto before = kernels::run_calibration(measurements, targets);
  nlohmann::json out = kernels::calibration_json(before);
  out["rows_file"] = o.rows;
  for (const auto& [name, target] : targets) out["targets"][name] = target.source_file;

  std::fprintf(text, "Calibration against public hardware measurements (%s), rows: %s\n",
               std::string(sim::kSimulatorVersion).c_str(), o.rows.c_str());
  for (const auto& [name, target] : targets)
    std::fprintf(text, "  %s: %s\n", name.c_str(), target.source_file.c_str());
  std::fprintf(text, "\n");
  print_table(text, before);
  print_agreement(text, before);
  bool in_band = print_verdict(text, before);

  if (o.fit) {
    nlohmann::json fits = nlohmann::json::object();
    kernels::CalibrationTargets fitted = targets;
    for (const auto& name : names) {
      if (!targets.count(name)) continue;
      std::vector<kernels::TracedMeasurement> fit_rows;
      for (const auto& row : before)
        if (row.measurement.target == name && row.measurement.fit && row.valid)
          fit_rows.push_back(kernels::trace_measurement(row.measurement, targets.at(name)));
      if (fit_rows.empty()) {
        std::fprintf(text, "\n%s: no valid row marked fit; its constants are unchanged\n", name.c_str());
        continue;
      }
      const auto result = kernels::fit_constants(fit_rows, targets.at(name));
      fitted[name] = result.target;
      std::fprintf(text,
                   "\n%s: fitted on %zu rows (rms log ratio %.4f -> %.4f; %d iterations, %ld simulations; "
                   "stopped: %s)\n",
                   name.c_str(), fit_rows.size(), result.rms_log_before, result.rms_log_after,
                   result.iterations, result.simulations, result.stopped.c_str());
      nlohmann::json values = nlohmann::json::object();
      for (const auto& v : result.values) {
        std::fprintf(text, "  %-26s %10.4g -> %-10.4g %-6s [%g, %g]%s\n", v.name.c_str(), v.before, v.after,
                     v.unit.c_str(), v.low, v.high,
                     !v.sensitive ? "  (no row depends on it)"
                     : v.at_bound ? "  at its bound"
                                  : "");
        values[v.name] = {
            {"before", v.before}, {"after", v.after}, {"unit", v.unit}, {"at_bound", v.at_bound}};
      }
      fits[name] = {{"rows", fit_rows.size()},
                    {"rms_log_before", result.rms_log_before},
                    {"rms_log_after", result.rms_log_after},
                    {"constants", values}};
    }
    const auto after = kernels::run_calibration(measurements, fitted);
    std::fprintf(text, "\nbefore and after the fit (ratio = simulated / measured):\n");
    std::vector<std::vector<std::string>> cells = {{"source", "kernel", "shape", "target", "measured ms",
                                                    "before ms", "after ms", "ratio before", "after",
                                                    "fitted on"}};
    int outside = 0;
    for (std::size_t i = 0; i < after.size(); ++i) {
      const auto& m = after[i].measurement;
      std::vector<std::string> line = {m.source, m.kernel_text(), m.shape_text() + " " + m.dtype, m.target,
                                       number("%.4g", m.measured_ms)};
      if (!before[i].valid || !after[i].valid) {
        line.push_back((before[i].valid ? after[i] : before[i]).error);
        ++outside;
      } else {
        outside += after[i].in_band() ? 0 : 1;
        line.insert(line.end(), {number("%.4g", before[i].simulated_ms),
                                 number("%.4g", after[i].simulated_ms), number("%.2f", before[i].ratio()),
                                 number("%.2f", after[i].ratio()), m.fit ? "yes" : "no"});
      }
      cells.push_back(line);
    }
    std::fputs(kernels::table_text(cells, {4, 5, 6, 7, 8}).c_str(), text);
    std::fprintf(text, "\nafter the fit, Kendall's tau per source:");
    for (const auto& s : kernels::agreement_by_source(after))
      std::fprintf(text, " %s %.2f;", s.source.c_str(), s.tau);
    std::fprintf(text, "\nafter the fit, every row within %.2f-%.2f: %s\n", kernels::kCalibrationLow,
                 kernels::kCalibrationHigh,
                 outside == 0 ? "yes" : ("NO (" + std::to_string(outside) + " outside)").c_str());
    out["fit"] = fits;
    out["after_fit"] = kernels::calibration_json(after);
    in_band = outside == 0;
  }
  if (!o.json.empty()) write_json(o.json, out);
  return in_band ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UserError& e) {
    std::fprintf(stderr, "bench_calibration: error: %s\n", e.what());
    return 2;
  }
}
