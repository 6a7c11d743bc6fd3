// autotune calibrate MEASUREMENTS --target T -o OUT.yaml [--fit NAME,NAME] [--json]
//
// Fits a target's fitted constants (sim/target_constants.hpp) to a user's
// hardware measurements (JSON lines or CSV, kernels/calibration.hpp): least
// squares on log(simulated / measured) over the rows marked fit (every row
// unless it says otherwise), each constant within its plausible bounds
// (kernels/calibration_fit.hpp). Prints each row before and after, warns for
// each row still outside 0.8-1.25 with the head of its critical path (a
// missing mechanism, not a constant), and writes a copy of the target file
// with the fitted values, which any goal can name (`target: OUT.yaml`).
// Misuse (an unreadable or malformed file, an unknown kernel, variant,
// parameter or constant, a row of another target) is one line naming the
// file, line and field, before anything is simulated. Exit status: 0 when the
// target was written, 2 on misuse.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/calibration.hpp"
#include "kernels/calibration_fit.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "sim/target_constants.hpp"

namespace autotune::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::string measurements, target, output, fit;
  bool json = false;
};

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const auto begin = item.find_first_not_of(' ');
    const auto end = item.find_last_not_of(' ');
    if (begin != std::string::npos) out.push_back(item.substr(begin, end - begin + 1));
  }
  return out;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

struct RowReport {
  const kernels::Measurement* measurement = nullptr;
  bool valid = false;
  std::string error;
  double before_ms = 0, after_ms = 0;
  std::string critical_path;  // the head of the fitted simulation's critical path
  double ratio_before() const { return before_ms / measurement->measured_ms; }
  double ratio_after() const { return after_ms / measurement->measured_ms; }
  bool in_band() const {
    return valid && ratio_after() >= kernels::kCalibrationLow && ratio_after() <= kernels::kCalibrationHigh;
  }
};

int run_calibrate(const CalibrateOptions& o) {
  // Everything the command line and the file say is checked before any simulation.
  std::vector<std::string> constants;
  for (const auto& name : split_names(o.fit)) {
    const sim::FittedConstant* constant = sim::find_fitted_constant(name);
    if (constant == nullptr)
      throw UserError("--fit: unknown fitted constant '" + name +
                      "' (accepted: " + sim::fitted_constant_names() + ", or their target-file keys)");
    constants.push_back(std::string(constant->name));
  }
  if (!o.fit.empty() && constants.empty())
    throw UserError("--fit '" + o.fit + "' names no constant (accepted: " + sim::fitted_constant_names() +
                    ")");
  const sim::TargetSpec target = sim::load_target(o.target);
  if (o.output.empty()) throw UserError("-o OUT.yaml is required: where the fitted target file is written");
  const fs::path output = fs::absolute(o.output);
  const std::vector<KeptFile> inputs{{o.measurements, "the measurements file"}};
  std::vector<KeptFile> kept = inputs;
  kept.push_back({target.source_file, "the target file it starts from"});
  check_output_path(o.output, "-o", kept, true);

  const auto rows = kernels::read_measurements(o.measurements, true);
  for (const auto& row : rows) {
    if (row.target != target.name && row.target != o.target)
      throw UserError(row.where() + ": target: '" + row.target + "' differs from --target " + o.target +
                      " (target name '" + target.name + "'); calibrate one target at a time, with the " +
                      row.target + " rows in their own file");
    if (const auto problem = kernels::check_measurement(row))
      throw UserError(row.where() + ": " + problem->field + ": " + problem->reason);
  }
  int fit_rows = 0;
  for (const auto& row : rows) fit_rows += row.fit ? 1 : 0;
  if (fit_rows == 0)
    throw UserError(o.measurements +
                    ": no row is marked fit (\"fit\": true, the default): nothing to fit on");

  FILE* text = o.json ? stderr : stdout;
  const std::vector<std::string> fitted_names =
      constants.empty() ? split_names(sim::fitted_constant_names()) : constants;
  std::fprintf(text, "calibrating %s (%s) on %zu rows of %s (%d fitted on); constants: %s\n",
               target.name.c_str(), target.source_file.c_str(), rows.size(), o.measurements.c_str(), fit_rows,
               join(fitted_names, ", ").c_str());

  // Trace every row once; a configuration the simulator rejects is reported and left out.
  std::vector<kernels::TracedMeasurement> traced(rows.size());
  std::vector<kernels::RowTiming> before(rows.size());
  kernels::parallel_for(rows.size(), [&](std::size_t i) {
    traced[i] = kernels::trace_measurement(rows[i], target);
    before[i] = kernels::time_measurement(traced[i], target, false);
  });
  std::vector<kernels::TracedMeasurement> fit_set;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!before[i].valid) {
      std::fprintf(stderr, "autotune: warning: %s: left out: %s\n", rows[i].where().c_str(),
                   before[i].error.c_str());
      continue;
    }
    if (rows[i].fit) fit_set.push_back(traced[i]);
  }
  if (fit_set.empty())
    throw UserError(o.measurements + ": no row marked fit can be simulated on " + target.name);

  kernels::FitOptions fit_options;
  fit_options.constants = constants;
  if (!o.json) fit_options.progress = [](const std::string& line) { std::printf("  %s\n", line.c_str()); };
  const kernels::FitResult fit = kernels::fit_constants(fit_set, target, fit_options);

  std::vector<kernels::RowTiming> after(rows.size());
  kernels::parallel_for(rows.size(), [&](std::size_t i) {
    if (before[i].valid) after[i] = kernels::time_measurement(traced[i], fit.target, true);
  });
  std::vector<RowReport> reports(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RowReport& r = reports[i];
    r.measurement = &rows[i];
    r.valid = before[i].valid && after[i].valid;
    r.error = before[i].valid ? after[i].error : before[i].error;
    r.before_ms = before[i].simulated_ms;
    r.after_ms = after[i].simulated_ms;
    if (r.valid) r.critical_path = kernels::critical_path_headline(after[i].summary);
  }

  // The fitted target file.
  std::set<std::string> sources;
  for (const auto& row : rows)
    if (row.fit && !row.source.empty()) sources.insert(row.source);
  std::map<std::string, double> values;
  for (const auto& v : fit.values) values[v.name] = v.after;
  char summary[256];
  std::snprintf(summary, sizeof summary, "rms log(simulated / measured) on them %.4f -> %.4f",
                fit.rms_log_before, fit.rms_log_after);
  const std::string provenance =
      "Recalibrated by `autotune calibrate` (" + std::string(sim::kSimulatorVersion) + ") on " +
      std::to_string(fit_set.size()) + " rows of " + fs::path(o.measurements).filename().string() +
      (sources.empty() ? "" : " (sources: " + join(sources, "; ") + ")") + ":\n" + summary + ".";
  sim::write_fitted_target(target.source_file, values, output, provenance, inputs);
  const sim::TargetSpec written = sim::load_target_file(output);
  const std::string hash = sim::target_content_hash(written);

  if (o.json) {
    nlohmann::json out = {{"simulator_version", std::string(sim::kSimulatorVersion)},
                          {"measurements", o.measurements},
                          {"target", target.name},
                          {"target_file", target.source_file},
                          {"output", output.string()},
                          {"content_hash", hash},
                          {"band", {kernels::kCalibrationLow, kernels::kCalibrationHigh}},
                          {"rows_fitted_on", fit_set.size()},
                          {"rms_log_before", fit.rms_log_before},
                          {"rms_log_after", fit.rms_log_after},
                          {"iterations", fit.iterations},
                          {"simulations", fit.simulations},
                          {"stopped", fit.stopped}};
    out["constants"] = nlohmann::json::array();
    for (const auto& v : fit.values)
      out["constants"].push_back({{"name", v.name},
                                  {"key", v.key},
                                  {"unit", v.unit},
                                  {"before", v.before},
                                  {"after", v.after},
                                  {"bounds", {v.low, v.high}},
                                  {"at_bound", v.at_bound},
                                  {"sensitive", v.sensitive}});
    out["rows"] = nlohmann::json::array();
    bool all_in_band = true;
    for (const auto& r : reports) {
      nlohmann::json j = r.measurement->to_json();
      j["where"] = r.measurement->where();
      j["valid"] = r.valid;
      if (r.valid) {
        j["before_ms"] = r.before_ms;
        j["after_ms"] = r.after_ms;
        j["ratio_before"] = r.ratio_before();
        j["ratio_after"] = r.ratio_after();
        if (!r.in_band()) j["warning"] = "a missing mechanism, not a constant: " + r.critical_path;
      } else {
        j["error"] = r.error;
      }
      j["in_band"] = r.in_band();
      all_in_band = all_in_band && r.in_band();
      out["rows"].push_back(j);
    }
    out["all_in_band"] = all_in_band;
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  std::printf("stopped after %d iterations (%ld simulations): %s\n\n", fit.iterations, fit.simulations,
              fit.stopped.c_str());
  std::printf("%-26s %10s %10s  %-7s %s\n", "constant", "before", "after", "unit", "bounds");
  for (const auto& v : fit.values)
    std::printf("%-26s %10.4g %10.4g  %-7s [%g, %g]%s\n", v.name.c_str(), v.before, v.after, v.unit.c_str(),
                v.low, v.high,
                !v.sensitive ? "  no row depends on it: unchanged"
                : v.at_bound ? "  at its bound: the rows ask for a value outside the plausible range"
                             : "");
  std::vector<std::vector<std::string>> cells = {{"row", "kernel", "shape", "measured ms", "before ms",
                                                  "after ms", "ratio before", "after", "fitted on"}};
  int outside = 0;
  for (const auto& r : reports) {
    const auto& m = *r.measurement;
    std::vector<std::string> line = {fs::path(m.file).filename().string() + ":" + std::to_string(m.line),
                                     m.kernel_text(), m.shape_text() + " " + m.dtype,
                                     format("%.4g", m.measured_ms)};
    if (!r.valid) {
      line.push_back("left out: " + r.error);
    } else {
      outside += r.in_band() ? 0 : 1;
      line.insert(line.end(),
                  {format("%.4g", r.before_ms), format("%.4g", r.after_ms), format("%.2f", r.ratio_before()),
                   format("%.2f", r.ratio_after()), m.fit ? "yes" : "no"});
    }
    cells.push_back(line);
  }
  std::printf("\n%s", kernels::table_text(cells, {3, 4, 5, 6, 7}).c_str());
  std::printf("\nrms log(simulated / measured) on the rows fitted on: %.4f -> %.4f\n", fit.rms_log_before,
              fit.rms_log_after);
  std::fflush(stdout);  // the warnings (stderr) follow the table
  for (const auto& r : reports)
    if (r.valid && !r.in_band())
      std::fprintf(
          stderr,
          "autotune: warning: %s (%s): %s after the fit, outside %.2f-%.2f: a missing mechanism, not a "
          "constant: the profile's critical path says %s\n",
          r.measurement->where().c_str(),
          (r.measurement->kernel_text() + " " + r.measurement->shape_text()).c_str(),
          ("ratio " + format("%.2f", r.ratio_after())).c_str(), kernels::kCalibrationLow,
          kernels::kCalibrationHigh, r.critical_path.c_str());
  std::printf("%s within %.2f-%.2f after the fit\n",
              outside == 0 ? "every row" : (std::to_string(outside) + " rows not").c_str(),
              kernels::kCalibrationLow, kernels::kCalibrationHigh);
  std::printf("wrote %s (target %s, content hash %s); a goal names it as `target: %s`\n",
              output.string().c_str(), written.name.c_str(), hash.c_str(), o.output.c_str());
  return 0;
}

const CommandRegistration registration{
    "calibrate", "Fit a target's fitted constants to your hardware measurements and write the target file",
    [](CLI::App& app) -> CommandAction {
      auto o = std::make_shared<CalibrateOptions>();
      app.add_option("MEASUREMENTS", o->measurements,
                     "JSON lines or CSV: family, variant, params, shape, dtype, target, measured_ms per row "
                     "(docs/calibration.md)")
          ->required();
      app.add_option("--target", o->target, "The target to start from: a name (trn1, trn2) or a .yaml path")
          ->required();
      app.add_option("-o,--output", o->output, "Where the fitted target file is written")->required();
      app.add_option("--fit", o->fit,
                     "Comma-separated constants to fit (default: all: " + sim::fitted_constant_names() + ")")
          ->check(check_not_empty);
      app.add_flag("--json", o->json, "Print the result as one JSON object");
      return [o] { return run_calibrate(*o); };
    }};

}  // namespace
}  // namespace autotune::cli
