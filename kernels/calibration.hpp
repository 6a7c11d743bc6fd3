#pragma once
// The simulator's calibration against hardware: measurement rows (a kernel
// of the kernel API at a shape, dtype and target, and the latency measured on
// a Trainium), read from a JSON-lines or CSV file (docs/calibration.md), each
// simulated on its target and compared. configs/calibration/public.jsonl holds
// the public measurements (the NKI matmul tutorial on trn1, the NKI library's
// attention on trn2, ...); bench/calibration prints them, `autotune calibrate`
// fits a target's constants to a user's own (kernels/calibration_fit.hpp).
//
// Goal: every row's simulated / measured within kCalibrationLow-kCalibrationHigh.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::kernels {

inline constexpr double kCalibrationLow = 0.8, kCalibrationHigh = 1.25;

// One hardware measurement: a row of a measurements file.
struct Measurement {
  std::string file;  // where it was read, for messages
  int line = 0;
  std::string source;     // short name of who measured it ("NKI matmul tutorial")
  std::string reference;  // where the figure is published: repository/file or URL, section
  std::string family, variant;
  ParamValues params;  // as given; the variant's defaults complete them
  Shape shape;         // every shape argument of the family
  std::string dtype;
  std::string target;  // the target it was measured on (a target name: trn1, trn2)
  double measured_ms = 0;
  bool fit = true;  // whether fitted constants are fitted on it
  // Whether the measured time holds the per-call launch floor ("launch":
  // false: a marginal time per call, compared with the simulated time
  // without the target's launch_overhead).
  bool includes_launch = true;
  std::string note;

  std::string where() const;       // "file:line"
  std::string shape_text() const;  // "M=4096,N=8192,K=8192" in the family's argument order when known
  std::string kernel_text() const;  // "gemm/blocked_mnk tile_m=128 ...": family/variant and the given params
  nlohmann::json to_json() const;  // the row as the JSON-lines format writes it
};

// Reads a measurements file: JSON lines (one object per line, blank lines
// skipped) or CSV with a header naming the columns (family, variant, params,
// shape, dtype, target, measured_ms; optionally source, reference, fit, note;
// params and shape as k=v;k=v). CSV is recognised by a .csv extension.
// `fit_default` is the fit flag of a row that gives none. UserError naming
// file:line, the field and what is accepted on a malformed row, an unknown
// field, a missing one or a value of the wrong type; nothing about whether the
// kernel exists (see check_measurement).
std::vector<Measurement> read_measurements(const std::filesystem::path& file, bool fit_default = true);

// Why the row names no kernel that can be traced: an unknown family, variant,
// parameter or parameter value, dtype or shape argument, or a missing shape
// argument. `field` is the row's field at fault.
struct MeasurementProblem {
  std::string field;
  std::string reason;
};
std::optional<MeasurementProblem> check_measurement(const Measurement& row);

// The row's kernel traced once for `target`: the fitted constants do not
// change the program, so a fit simulates it again and again without tracing.
struct TracedMeasurement {
  Measurement measurement;
  std::string error;  // why it cannot be simulated: a MeasurementProblem or a trace failure
  std::shared_ptr<const sim::Program> program;
};
TracedMeasurement trace_measurement(const Measurement& row, const sim::TargetSpec& target);

// The simulated time of a traced row on `target` (timing only, no timeline).
struct RowTiming {
  bool valid = false;
  std::string error;  // the simulator's rule and message when invalid, or the trace error
  double simulated_ms = 0;
  nlohmann::json summary;  // the profile summary (critical_path included) when valid and asked for
};
RowTiming time_measurement(const TracedMeasurement& row, const sim::TargetSpec& target, bool keep_summary);

// Runs job(0..count-1) over `threads` threads (0: std::thread::hardware_concurrency).
void parallel_for(std::size_t count, const std::function<void(std::size_t)>& job, unsigned threads = 0);

// One row of the calibration table.
struct CalibrationRow {
  Measurement measurement;
  std::string target_file;  // the target file it was simulated on
  bool valid = false;
  std::string error;  // unknown variant, invalid configuration, ...: the reason
  double simulated_ms = 0;
  nlohmann::json summary;  // the profile summary when valid
  double ratio() const { return simulated_ms / measurement.measured_ms; }
  bool in_band() const { return valid && ratio() >= kCalibrationLow && ratio() <= kCalibrationHigh; }
};

// Target name -> the target to simulate that name's rows on; names not in it
// are loaded with sim::load_target.
using CalibrationTargets = std::map<std::string, sim::TargetSpec>;

// Every row simulated on its target, in parallel; in the rows' order.
std::vector<CalibrationRow> run_calibration(const std::vector<Measurement>& rows,
                                            const CalibrationTargets& targets = {}, unsigned threads = 0);

// Kendall's tau-b between two equally long series (1: the same order, -1: the
// reverse; 0 when either is constant).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// Per source with at least three valid rows: tau between measured and simulated times.
struct SourceAgreement {
  std::string source;
  int rows = 0;
  double tau = 0;
};
std::vector<SourceAgreement> agreement_by_source(const std::vector<CalibrationRow>& rows);

// The table as JSON: rows (measurement, simulated_ms, ratio, in_band, error),
// per-source tau, band and whether every row is in it.
nlohmann::json calibration_json(const std::vector<CalibrationRow>& rows);

// Rows of cells as text in columns as wide as their widest cell, two spaces
// apart; columns listed in `right_aligned` (numbers) are aligned right.
std::string table_text(const std::vector<std::vector<std::string>>& cells,
                       const std::vector<std::size_t>& right_aligned = {});

// "the path is 71% dma busy, 18% dma_fixed wait; top line: dma_copy at
// attention_cte.hpp:212 (31%)": the head of a profile summary's critical path.
std::string critical_path_headline(const nlohmann::json& summary);

}  // namespace autotune::kernels
