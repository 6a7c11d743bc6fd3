// Target files as data, and the Perfetto export.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "sim/simulator.hpp"
#include "tests/unit/sim/program_builder.hpp"

using namespace autotune::sim;
using autotune::sim::testing::ProgramBuilder;

namespace fs = std::filesystem;

namespace {
std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("autotune_sim_test_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}
}  // namespace

TEST_CASE("trn1 and trn2 load with NEURONCORE.md's figures") {
  const TargetSpec t1 = autotune::sim::testing::target("trn1");
  const TargetSpec t2 = autotune::sim::testing::target("trn2");
  CHECK(t1.name == "trn1");
  CHECK(t1.clock(Engine::tensor) == doctest::Approx(2.8e9));
  CHECK(t1.sbuf_bytes_per_partition == 176 * 1024);
  CHECK(t1.psum_banks == 8);
  CHECK(t1.psum_bank_bytes == 2048);
  CHECK(t1.dma_queues == 16);
  CHECK(t1.dma_queue_bytes_per_s * t1.dma_queues == doctest::Approx(272e9));
  CHECK(t1.peak_flops(Dtype::bf16) == doctest::Approx(91.75e12));
  CHECK(t1.peak_flops(Dtype::fp32) == doctest::Approx(23e12));
  // nki.isa.nc_matmul's tiling mode: 2x 64 on NeuronCore-v2, 4x 32 on v3.
  CHECK(t1.pe_tile_min == 64);
  CHECK(t2.pe_tile_min == 32);
  CHECK(t1.vector_gpsimd_share_sbuf_port);
  CHECK_FALSE(t2.vector_gpsimd_share_sbuf_port);
  CHECK_FALSE(t2.vector_scalar_share_psum_port);
  CHECK(t2.elements_per_s(Engine::vector, Dtype::bf16) == doctest::Approx(512 * 0.96e9));
  const auto c = t1.constants();
  for (const char* key : {"sbuf_bytes_per_partition", "psum_bank_bytes", "psum_banks", "partitions",
                          "max_moving_free", "max_stationary_free"})
    CHECK_MESSAGE(c.count(key) == 1, key);
  CHECK(c.at("max_moving_free") == 512);
}

TEST_CASE("targets are found by name through AUTOTUNE_CONFIG_DIR and listed") {
  const fs::path dir = scratch_dir("env");
  fs::create_directories(dir / "targets");
  fs::copy_file(fs::path(AUTOTUNE_SOURCE_DIR) / "configs/targets/trn1.yaml", dir / "targets/mine.yaml",
                fs::copy_options::overwrite_existing);
  ::setenv("AUTOTUNE_CONFIG_DIR", dir.c_str(), 1);
  CHECK(list_targets() == std::vector<std::string>{"mine"});
  CHECK(load_target("mine").name == "trn1");
  CHECK_THROWS_WITH_AS(load_target("trn9"), "unknown target 'trn9' (accepted: mine)", autotune::UserError);
  ::unsetenv("AUTOTUNE_CONFIG_DIR");
  const auto names = list_targets();  // the repository's configs, compiled in
  CHECK(std::set<std::string>(names.begin(), names.end()).count("trn1") == 1);
  CHECK(load_target("trn2").name == "trn2");
  fs::remove_all(dir);
}

TEST_CASE("a target file with an unknown key is rejected with file:line:key") {
  const fs::path dir = scratch_dir("typo");
  std::string text = read_file(fs::path(AUTOTUNE_SOURCE_DIR) / "configs/targets/trn1.yaml");
  const std::string needle = "  queues: 16";
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  text.insert(at, "  queue_count: 16\n");
  int line = 1;
  for (std::size_t i = 0; i < at; ++i) line += text[i] == '\n';
  const fs::path file = dir / "bad.yaml";
  std::ofstream(file) << text;
  try {
    load_target(file.string());
    FAIL("unknown key accepted");
  } catch (const autotune::UserError& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(
        message.find(file.string() + ":" + std::to_string(line) + ": dma.queue_count: unknown key") == 0,
        message);
  }
  fs::remove_all(dir);
}

TEST_CASE("a target's smallest PE tile is 32, 64 or 128") {
  const fs::path dir = scratch_dir("min_tile");
  std::string text = read_file(fs::path(AUTOTUNE_SOURCE_DIR) / "configs/targets/trn2.yaml");
  const std::string needle = "  min_tile: 32";
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  text.replace(at, needle.size(), "  min_tile: 48");
  const fs::path file = dir / "bad.yaml";
  std::ofstream(file) << text;
  try {
    load_target(file.string());
    FAIL("a 48-row PE tile accepted");
  } catch (const autotune::UserError& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(message.find("tensor_engine.min_tile") != std::string::npos, message);
    CHECK_MESSAGE(message.find("32, 64 or 128") != std::string::npos, message);
  }
  fs::remove_all(dir);
}

TEST_CASE("a target's figures are bounded: what would overflow the simulator is refused at its key") {
  const fs::path dir = scratch_dir("bounds");
  const std::string original = read_file(fs::path(AUTOTUNE_SOURCE_DIR) / "configs/targets/trn1.yaml");
  // Each edit once led to an internal error (bad_alloc) or a negative cycle count.
  const std::tuple<const char*, const char*, const char*> edits[] = {
      {"queue_bytes_per_ns: 17 ", "queue_bytes_per_ns: 1e-300 ",
       "dma.queue_bytes_per_ns: must be a positive number from 1e-06 to 1e+09, got 1e-300"},
      {"partitions: 128 ", "partitions: 2000000000 ",
       "memory.partitions: must be a positive integer, at most 65536"},
      {"queues: 16 ", "queues: 2000000000 ", "dma.queues: must be a positive integer, at most 65536"},
      {"fixed_cost_us: 1.3 ", "fixed_cost_us: 1e300 ", "dma.fixed_cost_us: must be >= 0 and at most 1e+09"},
  };
  for (const auto& [from, to, needle] : edits) {
    CAPTURE(to);
    std::string text = original;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string(from).size(), to);
    const fs::path file = dir / "bad.yaml";
    std::ofstream(file) << text;
    CHECK_THROWS_WITH_AS(load_target(file.string()), doctest::Contains(needle), autotune::UserError);
  }
  fs::remove_all(dir);
}

TEST_CASE("the Perfetto trace is valid JSON with one named track per engine and per DMA queue") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto o = b.output("o", 128, 512);
  auto t = b.sbuf("t", 128, 512);
  auto u = b.sbuf("u", 128, 512, Dtype::fp32, 2048);
  b.dma(b.all(t), b.all(x));
  b.unary(Opcode::activation, Engine::scalar, b.all(u), b.all(t));
  b.dma(b.all(o), b.all(u));
  const TargetSpec target = autotune::sim::testing::target("trn1");
  SimOptions options;
  options.functional = false;
  const SimResult r = simulate(b.program, target, options);
  REQUIRE(r.valid);
  const fs::path dir = scratch_dir("trace");
  const fs::path file = dir / "trace.json";
  write_perfetto_trace(r, b.program, file.string());
  const auto json = nlohmann::json::parse(read_file(file));  // throws if invalid
  std::set<int> named, used;
  std::set<std::string> names;
  for (const auto& event : json["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      named.insert(event["tid"].get<int>());
      names.insert(event["args"]["name"].get<std::string>());
    }
    if (event["ph"] == "X") {
      used.insert(event["tid"].get<int>());
      CHECK(event["dur"].get<double>() >= 0);
      CHECK(event["args"].contains("source"));
      CHECK(event["args"].contains("operands"));
    }
  }
  CHECK(named.size() == 4 + std::size_t(target.dma_queues));
  CHECK(names.count("tensor engine") == 1);
  CHECK(names.count("dma queue 15") == 1);
  for (int tid : used) CHECK(named.count(tid) == 1);
  CHECK(used.size() == 1 + std::size_t(target.dma_queues));  // scalar + every queue
  fs::remove_all(dir);
}

TEST_CASE("the text profile names the latency and the hottest line") {
  ProgramBuilder b;
  auto t = b.sbuf("t", 128, 512);
  b.memset(b.all(t), 1.0f);
  SimOptions options;
  options.functional = false;
  const SimResult r = simulate(b.program, autotune::sim::testing::target("trn1"), options);
  const std::string text = format_profile_text(r);
  CHECK(text.find("latency") != std::string::npos);
  CHECK(text.find("target_and_trace_test.cpp:") != std::string::npos);
}

TEST_CASE("a program's content hash sees what it computes, not names or source lines") {
  using namespace autotune::sim;
  using autotune::sim::testing::ProgramBuilder;
  auto build = [](const std::string& name, float scale, std::int64_t offset) {
    ProgramBuilder b;
    const auto x = b.input(name, 128, 64);
    const auto y = b.output("y", 128, 64);
    const auto t = b.sbuf("t_" + name, 128, 64, Dtype::fp32, offset);
    b.dma(b.all(t), b.all(x));
    b.activation(b.all(t), b.all(t), ActivationFunction::exp, scale, ScalarOperand{});
    b.dma(b.all(y), b.all(t));
    return b.program.content_hash();
  };
  const auto base = build("x", 1.0f, 0);
  CHECK(build("renamed", 1.0f, 0) == base);  // names and source lines are left out
  CHECK(build("x", 2.0f, 0) != base);        // an attribute
  CHECK(build("x", 1.0f, 4096) != base);     // a placement
}

TEST_CASE("dependency signatures tell layouts that change the schedule from those that do not") {
  // Two loads into two tiles, then a store of the second: placed apart (the
  // loads are independent), or at the same address (the second load waits
  // for the first).
  auto build = [](std::int64_t second_offset, int cols) {
    ProgramBuilder b;
    const auto x = b.input("x", 128, 64);
    const auto y = b.output("y", 128, 64);
    const auto t0 = b.sbuf("t0", 128, cols, Dtype::fp32, 0);
    const auto t1 = b.sbuf("t1", 128, cols, Dtype::fp32, second_offset);
    b.dma(ProgramBuilder::part(t0, 0, 128, 0, 64), b.all(x));
    b.dma(ProgramBuilder::part(t1, 0, 128, 0, 64), b.all(x));
    b.dma(b.all(y), ProgramBuilder::part(t1, 0, 128, 0, 64));
    return std::move(b.program);
  };
  const TargetSpec trn1 = load_target("trn1");
  const Program apart = build(4096, 64), larger = build(8192, 128), overlapping = build(0, 64);
  CHECK(apart.layout_free_hash() == larger.layout_free_hash());
  CHECK(apart.content_hash() != larger.content_hash());
  CHECK(dependency_signature(apart, trn1).hash == dependency_signature(larger, trn1).hash);
  CHECK(apart.layout_free_hash() == overlapping.layout_free_hash());
  CHECK(dependency_signature(apart, trn1).hash != dependency_signature(overlapping, trn1).hash);
  const SimOptions timing{.functional = false, .record_timeline = false};
  CHECK(simulate(apart, trn1, timing).cycles == simulate(larger, trn1, timing).cycles);
  CHECK(simulate(apart, trn1, timing).cycles < simulate(overlapping, trn1, timing).cycles);
}

TEST_CASE("a program past its instruction limit is refused while it is traced") {
  ProgramBuilder b;
  b.program.set_instruction_limit(3);
  const auto x = b.input("x", 128, 64);
  const auto t = b.sbuf("t", 128, 64);
  for (int i = 0; i < 3; ++i) b.dma(b.all(t), b.all(x));
  CHECK_THROWS_AS(b.dma(b.all(t), b.all(x)), ProgramTooLarge);
  CHECK(b.program.size() == 3);
}
