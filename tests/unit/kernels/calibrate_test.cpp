// Fitting the fitted constants to measurements (kernels/calibration_fit.hpp)
// and reading measurement files (kernels/calibration.hpp).
//
// The round trip: a target file with four fitted constants changed (DMA fixed
// cost x1.6, access start-up x0.6, launch floor x1.5, SBUF partitions per DGE
// instruction x2.5) "measures" ten small
// kernels of six families; fitting every constant from the original target
// must find each changed value, and keep each unchanged one, within 5%. The
// rows are chosen so that each constant moves some row's time (checked first,
// so that the test can fail).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/calibration.hpp"
#include "kernels/calibration_fit.hpp"
#include "sim/target.hpp"
#include "sim/target_constants.hpp"

using namespace autotune;
namespace fs = std::filesystem;

namespace {

fs::path scratch_directory() {
  const fs::path dir = fs::temp_directory_path() / ("autotune_calibrate_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

kernels::Measurement row(std::string family, std::string variant, kernels::ParamValues params,
                         kernels::Shape shape, std::string dtype) {
  kernels::Measurement m;
  m.file = "round-trip";
  m.line = 0;
  m.source = "round trip";
  m.family = std::move(family);
  m.variant = std::move(variant);
  m.params = std::move(params);
  m.shape = std::move(shape);
  m.dtype = std::move(dtype);
  m.target = "trn2";
  m.measured_ms = 1;
  return m;
}

// Small kernels (each simulates in milliseconds) whose times depend on the
// constants in different mixtures: small instructions (access start-up),
// cross-engine chains, transfers waited for one at a time (DMA fixed cost),
// small chunks (efficiency half-point), short kernels (launch floor).
std::vector<kernels::Measurement> round_trip_rows() {
  std::vector<kernels::Measurement> rows = {
      row("attention", "flash", {{"q_tile", 32}, {"kv_tile", 128}},
          {{"seq", 512}, {"q_heads", 2}, {"kv_heads", 1}, {"head_dim", 128}}, "bf16"),
      row("gemm", "blocked_mnk",
          {{"tile_m", 128},
           {"tile_n", 64},
           {"tiles_in_block_m", 4},
           {"tiles_in_block_n", 8},
           {"tiles_in_block_k", 8}},
          {{"M", 512}, {"N", 512}, {"K", 1024}}, "bf16"),
      row("gemm", "blocked_mnk",
          {{"tile_m", 32},
           {"tile_n", 64},
           {"tiles_in_block_m", 8},
           {"tiles_in_block_n", 8},
           {"tiles_in_block_k", 4}},
          {{"M", 256}, {"N", 512}, {"K", 512}}, "bf16"),
      row("gemm", "tiled", {{"pipeline_depth", 1}, {"tile_n", 128}}, {{"M", 256}, {"N", 512}, {"K", 512}},
          "bf16"),
      row("exp", "naive", {}, {{"rows", 250}, {"cols", 512}}, "fp32"),
      row("exp", "tiled", {{"tile_size", 64}, {"pipeline_depth", 4}}, {{"rows", 1024}, {"cols", 2048}},
          "fp32"),
      row("add", "tiled", {{"tile_size", 128}, {"pipeline_depth", 1}}, {{"rows", 1024}, {"cols", 1024}},
          "bf16"),
      row("rmsnorm", "naive", {}, {{"rows", 256}, {"cols", 1024}}, "fp32"),
      row("rope", "naive", {}, {{"seq", 256}, {"heads", 4}, {"head_dim", 128}}, "bf16"),
      // P^T by transposing DMAs from SBUF: the descriptor generators' share.
      row("attention", "flash_banked", {{"kv_tile", 512}, {"q_tiles", 1}, {"dma_transpose", 4}},
          {{"seq", 1024}, {"q_heads", 2}, {"kv_heads", 1}, {"head_dim", 128}}, "bf16"),
  };
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].line = static_cast<int>(i + 1);
  return rows;
}

std::vector<double> simulate_ms(const std::vector<kernels::TracedMeasurement>& rows,
                                const sim::TargetSpec& target) {
  std::vector<double> out;
  for (const auto& r : rows) {
    const auto timing = kernels::time_measurement(r, target, false);
    REQUIRE_MESSAGE(timing.valid,
                    r.measurement.family << "/" << r.measurement.variant << ": " << timing.error);
    out.push_back(timing.simulated_ms);
  }
  return out;
}

}  // namespace

TEST_CASE("calibrate: constants changed in a target file are fitted back within 5% from the original") {
  const fs::path dir = scratch_directory();
  // The start: trn2 with its fitted constants at fixed reference values (those
  // before trn2 was fitted on its own measurements), so that the test does not
  // move when trn2's calibration does.
  const fs::path start_file = dir / "start-trn2.yaml";
  sim::write_fitted_target(sim::load_target("trn2").source_file,
                           {{"access_startup", 60},
                            {"cross_engine_dependency", 100},
                            {"dma_fixed_cost", 1.3},
                            {"dma_efficiency_half_bytes", 1280},
                            {"launch_overhead", 12},
                            {"dge_partitions_per_instruction", 16}},
                           start_file, "the round trip's starting point");
  const sim::TargetSpec original = sim::load_target_file(start_file);
  const auto start = sim::fitted_values(original);
  std::map<std::string, double> truth = start;
  truth["dma_fixed_cost"] *= 1.6;
  truth["access_startup"] *= 0.6;
  truth["launch_overhead"] *= 1.5;
  truth["dge_partitions_per_instruction"] *= 2.5;
  const fs::path changed_file = dir / "changed-trn2.yaml";
  sim::write_fitted_target(start_file,
                           {{"dma_fixed_cost", truth["dma_fixed_cost"]},
                            {"access_startup", truth["access_startup"]},
                            {"launch_overhead", truth["launch_overhead"]},
                            {"dge_partitions_per_instruction", truth["dge_partitions_per_instruction"]}},
                           changed_file, "the round-trip test's hardware");
  const sim::TargetSpec changed = sim::load_target_file(changed_file);
  for (const auto& [name, value] : truth)
    CHECK(sim::fitted_constant(name).get(changed) == doctest::Approx(value));

  std::vector<kernels::TracedMeasurement> rows;
  for (const auto& m : round_trip_rows()) {
    rows.push_back(kernels::trace_measurement(m, original));
    REQUIRE_MESSAGE(rows.back().error.empty(), rows.back().error);
  }
  const std::vector<double> base = simulate_ms(rows, original);

  // Every constant moves some row: a 10% change of it changes that row's time
  // by at least 1% (d log t / d log c >= 0.1); else the fit could not find it.
  for (const auto& constant : sim::fitted_constants()) {
    CAPTURE(constant.name);
    sim::TargetSpec nudged = original;
    constant.set(nudged, constant.get(original) * 1.1);
    const std::vector<double> moved = simulate_ms(rows, nudged);
    double most = 0;
    for (std::size_t i = 0; i < rows.size(); ++i)
      most = std::max(most, std::fabs(std::log(moved[i] / base[i])) / std::log(1.1));
    CHECK(most >= 0.1);
  }

  // The "hardware" measurements, then the fit from the original target.
  const std::vector<double> measured = simulate_ms(rows, changed);
  int moved_rows = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].measurement.measured_ms = measured[i];
    moved_rows += std::fabs(measured[i] / base[i] - 1) > 0.05 ? 1 : 0;
  }
  CHECK(moved_rows >= 5);  // the changed constants show in most rows
  const kernels::FitResult fit = kernels::fit_constants(rows, original);
  MESSAGE("fit: " << fit.iterations << " iterations, " << fit.simulations << " simulations, rms log ratio "
                  << fit.rms_log_before << " -> " << fit.rms_log_after << ", stopped: " << fit.stopped);
  REQUIRE(fit.values.size() == sim::fitted_constants().size());
  for (const auto& v : fit.values) {
    CAPTURE(v.name);
    MESSAGE(v.name << ": " << v.before << " -> " << v.after << " " << v.unit << " (truth " << truth[v.name]
                   << ")");
    CHECK(v.before == doctest::Approx(start.at(v.name)));
    CHECK(std::fabs(v.after / truth[v.name] - 1) <= 0.05);
    CHECK(v.sensitive);
    CHECK_FALSE(v.at_bound);
  }
  CHECK(fit.rms_log_before > 0.05);
  CHECK(fit.rms_log_after < 0.01);

  // Fitting a subset leaves the others as they were.
  kernels::FitOptions only_launch;
  only_launch.constants = {"launch_overhead_us"};
  const kernels::FitResult partial = kernels::fit_constants(rows, original, only_launch);
  REQUIRE(partial.values.size() == 1);
  CHECK(partial.values[0].name == "launch_overhead");
  CHECK(partial.target.dma_fixed_cost_s == original.dma_fixed_cost_s);
  CHECK(partial.rms_log_after < partial.rms_log_before);

  // The fitted file loads, gives the fitted values, and is another target for the cache.
  std::map<std::string, double> values;
  for (const auto& v : fit.values) values[v.name] = v.after;
  const fs::path fitted_file = dir / "fitted-trn2.yaml";
  sim::write_fitted_target(original.source_file, values, fitted_file, "round trip");
  const sim::TargetSpec fitted = sim::load_target_file(fitted_file);
  for (const auto& v : fit.values)
    CHECK(sim::fitted_constant(v.name).get(fitted) == doctest::Approx(v.after).epsilon(1e-3));
  CHECK(sim::target_content_hash(fitted) != sim::target_content_hash(original));
  fs::remove_all(dir);
}

TEST_CASE("calibrate: a fit needs rows it can simulate") {
  const sim::TargetSpec target = sim::load_target("trn2");
  CHECK_THROWS_AS(kernels::fit_constants({}, target), UserError);
  auto bad = round_trip_rows().front();
  bad.variant = "nope";
  const auto traced = kernels::trace_measurement(bad, target);
  CHECK(traced.error.find("variant: unknown variant 'nope'") != std::string::npos);
  CHECK_THROWS_WITH_AS(kernels::fit_constants({traced}, target), doctest::Contains("round-trip:1"),
                       UserError);
  kernels::FitOptions unknown;
  unknown.constants = {"clock"};
  auto good = kernels::trace_measurement(round_trip_rows().front(), target);
  CHECK_THROWS_WITH_AS(kernels::fit_constants({good}, target, unknown),
                       doctest::Contains("accepted: access_startup"), UserError);
}

namespace {

// The message read_measurements gives for a file holding `text`.
std::string read_error(const std::string& name, const std::string& text) {
  const fs::path file = scratch_directory() / name;
  {
    std::ofstream out(file);
    out << text;
  }
  try {
    (void)kernels::read_measurements(file);
  } catch (const UserError& e) {
    fs::remove_all(file.parent_path());
    return e.what();
  }
  fs::remove_all(file.parent_path());
  return "no error";
}

const std::string kGood =
    R"({"family": "exp", "variant": "naive", "shape": {"rows": 250, "cols": 512}, "dtype": "fp32", "target": "trn2", "measured_ms": 0.02})";

}  // namespace

TEST_CASE("calibrate: measurement files are read strictly, errors name the file, line and field") {
  const fs::path dir = scratch_directory();
  {
    std::ofstream out(dir / "rows.jsonl");
    out << kGood << "\n\n"
        << R"({"source": "s", "family": "gemm", "variant": "tiled", "params": {"tile_n": 128}, "shape": {"M": 256, "N": 512, "K": 512}, "dtype": "bf16", "target": "trn2", "measured_ms": 0.1, "fit": false, "note": "n"})"
        << "\n";
    std::ofstream csv(dir / "rows.csv");
    csv << "family,variant,params,shape,dtype,target,measured_ms\n"
        << "exp,naive,,rows=250;cols=512,fp32,trn2,0.02\n"
        << "gemm,tiled,tile_n=128,M=256;N=512;K=512,bf16,trn2,0.1\n";
  }
  const auto rows = kernels::read_measurements(dir / "rows.jsonl");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].fit);  // a user's rows are fitted on unless they say otherwise
  CHECK(rows[1].line == 3);
  CHECK_FALSE(rows[1].fit);
  CHECK(rows[1].params.at("tile_n") == 128);
  CHECK(rows[1].shape_text() == "M=256,N=512,K=512");
  const auto csv = kernels::read_measurements(dir / "rows.csv");
  REQUIRE(csv.size() == 2);
  CHECK(csv[1].shape == rows[1].shape);
  CHECK(csv[1].params == rows[1].params);
  CHECK(csv[1].line == 3);
  CHECK_FALSE(kernels::check_measurement(csv[1]).has_value());
  fs::remove_all(dir);

  CHECK(read_error("a.jsonl", kGood + "\n{not json\n").find("a.jsonl:2: not a JSON object") !=
        std::string::npos);
  CHECK(read_error("a.jsonl", R"({"family": "exp"})").find("a.jsonl:1: variant: missing") !=
        std::string::npos);
  const std::string unknown = read_error("a.jsonl", kGood.substr(0, kGood.size() - 1) + R"(, "latency": 1})");
  CHECK(unknown.find("a.jsonl:1: latency: unknown field (accepted: family, variant") != std::string::npos);
  std::string negative = kGood;
  negative.replace(negative.find("0.02"), 4, "-1");
  CHECK(read_error("a.jsonl", negative).find("measured_ms: expected a positive, finite number") !=
        std::string::npos);
  std::string fractional = kGood;
  fractional.replace(fractional.find("250"), 3, "2.5");
  CHECK(read_error("a.jsonl", fractional).find("shape.rows: expected an integer") != std::string::npos);
  CHECK(read_error("a.jsonl", "\n").find("no measurements") != std::string::npos);
  CHECK(read_error("b.csv", "family,variant,shape,dtype,target\n")
            .find("b.csv:1: measured_ms: missing column") != std::string::npos);
  CHECK(read_error("b.csv", "family,variant,shape,dtype,target,measured_ms\nexp,naive,rows:250,fp32,trn2,1\n")
            .find("b.csv:2: shape: 'rows:250' is not NAME=INTEGER") != std::string::npos);
  CHECK(read_error("b.csv", "family,variant,shape,dtype,target,measured_ms\nexp,naive,rows=250,fp32,trn2\n")
            .find("b.csv:2: 5 fields where the header has 6") != std::string::npos);
  // An infinite time is no measurement: the fit would never converge on it.
  CHECK(
      read_error("b.csv", "family,variant,shape,dtype,target,measured_ms\nexp,naive,rows=250,fp32,trn2,inf\n")
          .find("b.csv:2: measured_ms: expected a positive, finite number of milliseconds, got inf") !=
      std::string::npos);

  // What names no kernel is the row's problem, with the field at fault.
  auto m = kernels::read_measurements([&] {
             const fs::path file = scratch_directory() / "c.jsonl";
             std::ofstream(file) << kGood << "\n";
             return file;
           }())
               .front();
  fs::remove_all(scratch_directory());
  CHECK_FALSE(kernels::check_measurement(m).has_value());
  auto broken = m;
  broken.family = "softmax";
  CHECK(kernels::check_measurement(broken)->field == "family");
  broken = m;
  broken.variant = "fused";
  CHECK(kernels::check_measurement(broken)->reason.find("accepted: naive, tiled") != std::string::npos);
  broken = m;
  broken.params["tile_size"] = 3;
  CHECK(kernels::check_measurement(broken)->field == "params");
  broken = m;
  broken.dtype = "int8";
  CHECK(kernels::check_measurement(broken)->field == "dtype");
  broken = m;
  broken.shape.erase("cols");
  CHECK(kernels::check_measurement(broken)->field == "shape.cols");
  broken = m;
  broken.shape["depth"] = 2;
  CHECK(kernels::check_measurement(broken)->field == "shape.depth");
}

TEST_CASE("calibrate: Kendall's tau") {
  CHECK(kernels::kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1));
  CHECK(kernels::kendall_tau({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1));
  CHECK(kernels::kendall_tau({1, 2, 3}, {1, 3, 2}) == doctest::Approx(1.0 / 3));
  CHECK(kernels::kendall_tau({1, 1, 1}, {1, 2, 3}) == 0);
}
