// Timing properties that must hold by mechanism (never wall-clock timing).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "sim/simulator.hpp"
#include "tests/unit/sim/program_builder.hpp"

using namespace autotune::sim;
using autotune::sim::testing::ProgramBuilder;

namespace {

const TargetSpec& trn1() {
  static const TargetSpec t = autotune::sim::testing::target("trn1");
  return t;
}
// trn2 with its fitted constants at fixed reference values (trn1's), so that
// these mechanism tests do not move when trn2's calibration does.
const TargetSpec& trn2() {
  static const TargetSpec t = [] {
    TargetSpec spec = autotune::sim::testing::target("trn2");
    spec.access_startup_cycles = 60;
    spec.cross_engine_dependency_cycles = 100;
    spec.dma_fixed_cost_s = 1.3e-6;
    spec.dma_efficiency_half_bytes = 1280;
    spec.launch_overhead_s = 12e-6;
    spec.dge_source_partitions = 16;
    return spec;
  }();
  return t;
}

SimResult timing(const Program& p, const TargetSpec& t = trn1()) {
  SimOptions options;
  options.functional = false;
  SimResult r = simulate(p, t, options);
  REQUIRE_MESSAGE(r.valid, r.error);
  return r;
}

const TimelineEntry& entry(const SimResult& r, InstructionId id) { return r.timeline.at(id); }

}  // namespace

TEST_CASE("read after write: a consumer starts after its producer finishes") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto t = b.sbuf("t", 128, 512);
  auto u = b.sbuf("u", 128, 512, Dtype::fp32, 4096);
  auto load = b.dma(b.all(t), b.all(x));
  auto use = b.copy(b.all(u), b.all(t));
  const auto r = timing(b.program);
  CHECK(entry(r, use).start_s >= entry(r, load).end_s);
}

TEST_CASE("disjoint regions carry no dependency, overlapping ones do") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto t = b.sbuf("t", 128, 1024);
  auto u = b.sbuf("u", 128, 512, Dtype::fp32, 8192);
  auto load = b.dma(b.part(t, 0, 128, 0, 512), b.all(x));
  // Reads the other half of t: written by nobody in this test's timing sense,
  // so fill it first with a memset that finishes long before the DMA.
  b.program.instructions();
  auto fill = b.memset(b.part(t, 0, 128, 512, 1024), 1.0f);
  auto disjoint = b.copy(b.all(u), b.part(t, 0, 128, 512, 1024), Engine::scalar);
  auto overlapping = b.copy(b.all(u), b.part(t, 0, 128, 256, 768), Engine::gpsimd);
  const auto r = timing(b.program);
  CHECK(entry(r, disjoint).start_s < entry(r, load).end_s);          // independent of the DMA
  CHECK(entry(r, disjoint).start_s >= entry(r, fill).end_s);         // but after the memset (RAW)
  CHECK(entry(r, overlapping).start_s >= entry(r, load).end_s);      // RAW on the overlap
  CHECK(entry(r, overlapping).start_s >= entry(r, disjoint).end_s);  // WAW on u
}

TEST_CASE("write after read: reusing an on-chip address waits for the old readers") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto y = b.input("y", 128, 512);
  auto o = b.output("o", 128, 512);
  auto tile0 = b.sbuf("tile#0", 128, 512);
  auto out0 = b.sbuf("out#0", 128, 512, Dtype::fp32, 2048 * 4);
  b.dma(b.all(tile0), b.all(x));
  auto reader = b.unary(Opcode::activation, Engine::scalar, b.all(out0), b.all(tile0));
  b.dma(b.all(o), b.all(out0));
  // A new buffer at the same address as tile#0: its load must wait for the reader.
  b.program.release_buffer(tile0);
  auto tile1 = b.sbuf("tile#1", 128, 512);
  auto reload = b.dma(b.all(tile1), b.all(y));
  // The same load into a fresh address does not wait.
  auto tile2 = b.sbuf("tile#2", 128, 512, Dtype::fp32, 2 * 2048 * 4);
  auto fresh = b.dma(b.all(tile2), b.all(y));
  const auto r = timing(b.program);
  CHECK(entry(r, reload).start_s >= entry(r, reader).end_s);
  CHECK(entry(r, fresh).start_s < entry(r, reader).start_s);
}

TEST_CASE("write after write on HBM orders two stores to the same rows only") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 128);
  auto o = b.output("o", 256, 128);
  auto t = b.sbuf("t", 128, 128);
  b.dma(b.all(t), b.all(x));
  auto first = b.dma(b.part(o, 0, 128, 0, 128), b.all(t));
  auto same_rows = b.dma(b.part(o, 0, 128, 0, 128), b.all(t));
  auto other_rows = b.dma(b.part(o, 128, 256, 0, 128), b.all(t));
  const auto r = timing(b.program);
  CHECK(entry(r, same_rows).start_s >= entry(r, first).end_s);
  CHECK(entry(r, other_rows).start_s < entry(r, first).end_s);
}

TEST_CASE("independent instructions on different engines run in parallel") {
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 512);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 2048);
  auto v = b.memset(b.all(a), 1.0f, Engine::vector);
  auto s = b.memset(b.all(c), 2.0f, Engine::scalar);
  const auto r = timing(b.program, trn2());  // no shared ports
  CHECK(entry(r, v).start_s == 0.0);
  CHECK(entry(r, s).start_s == 0.0);
  CHECK(r.summary["engine_overlap_percent"].get<double>() > 0.0);
}

TEST_CASE("one engine runs one instruction at a time, in program order, even when they are independent") {
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 512);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 2048);
  auto d = b.sbuf("d", 128, 512, Dtype::fp32, 4096);
  auto first = b.memset(b.all(a), 1.0f, Engine::vector);
  auto second = b.memset(b.all(c), 2.0f, Engine::vector);
  auto third = b.memset(b.all(d), 3.0f, Engine::vector);
  const auto r = timing(b.program, trn2());
  CHECK(entry(r, first).end_s > entry(r, first).start_s);
  CHECK(entry(r, second).start_s >= entry(r, first).end_s);
  CHECK(entry(r, third).start_s >= entry(r, second).end_s);
  CHECK(r.summary["engine_overlap_percent"].get<double>() == 0.0);
}

TEST_CASE("a DMA costs the fixed cost plus bytes at the efficiency of its chunk size") {
  const TargetSpec& t = trn1();
  auto one_load = [&](int cols) {
    ProgramBuilder b;
    auto x = b.input("x", 128, cols);
    auto s = b.sbuf("s", 128, cols);
    b.dma(b.all(s), b.all(x));
    return timing(b.program, t);
  };
  const auto small = one_load(64);    // 256 B per partition
  const auto large = one_load(2048);  // 8 KiB per partition
  const double fixed = t.dma_fixed_cost_s;
  CHECK(small.timeline[0].end_s - small.timeline[0].start_s > fixed);
  const double small_eff = small.summary["dma_average_efficiency_percent"].get<double>();
  const double large_eff = large.summary["dma_average_efficiency_percent"].get<double>();
  CHECK(small_eff == doctest::Approx(100.0 * 256 / (256 + t.dma_efficiency_half_bytes)));
  CHECK(large_eff > small_eff);
  // Bytes per second achieved grows with the transfer size.
  const double small_rate = 128.0 * 256 / (small.timeline[0].end_s - small.timeline[0].start_s);
  const double large_rate = 128.0 * 8192 / (large.timeline[0].end_s - large.timeline[0].start_s);
  CHECK(large_rate > 4 * small_rate);
  // The data part of the large load: 128 chunks over 16 queues at the queue bandwidth.
  const double expected = fixed + 128.0 * (8192 + t.dma_efficiency_half_bytes) / t.dma_queue_bytes_per_s / 16;
  CHECK(large.timeline[0].end_s - large.timeline[0].start_s == doctest::Approx(expected).epsilon(1e-9));
  CHECK(small.summary["dma_small_transfer_count"].get<int>() == 1);
  CHECK(large.summary["dma_small_transfer_count"].get<int>() == 0);
}

TEST_CASE("a transposing DMA moves element-sized chunks and is much slower") {
  auto load = [&](bool transpose) {
    ProgramBuilder b;
    auto x = b.input("x", 128, 128, Dtype::bf16);
    auto s = b.sbuf("s", 128, 128, Dtype::bf16);
    b.dma(b.all(s), b.all(x), transpose);
    return timing(b.program);
  };
  const auto plain = load(false), transposed = load(true);
  CHECK(transposed.total_time_s > 10 * plain.total_time_s - 9 * trn1().launch_overhead_s);
  CHECK(transposed.summary["dma_transposed_transfer_count"].get<int>() == 1);
}

TEST_CASE("trn2's DMA transposer moves 2-byte data in 16x128 blocks, other dtypes stay element-wise") {
  auto load = [&](bool transpose, Dtype dtype, const TargetSpec& t) {
    ProgramBuilder b;
    auto s = b.sbuf("s", 128, 512, dtype);
    auto d = b.sbuf("d", 128, 512, dtype, 4096);
    b.memset(b.all(s), 1.0f);
    b.dma(b.part(d, 0, 128, 0, 128), b.part(s, 0, 128, 0, 128), transpose);
    return timing(b.program, t);
  };
  const double launch = trn2().launch_overhead_s;
  const auto plain = load(false, Dtype::bf16, trn2()), blocked = load(true, Dtype::bf16, trn2());
  const auto fp32 = load(true, Dtype::fp32, trn2()), no_transposer = load(true, Dtype::bf16, trn1());
  // 8 blocks of 4 KiB at b / (b + h): slower than the plain copy's 128 rows
  // of 256 B only by the queues' split, far faster than element-wise.
  CHECK(blocked.total_time_s - launch < 2 * (plain.total_time_s - launch));
  CHECK(fp32.total_time_s - launch > 10 * (blocked.total_time_s - launch));
  CHECK(no_transposer.total_time_s - trn1().launch_overhead_s > 10 * (blocked.total_time_s - launch));
  CHECK(blocked.summary["dma_transposed_transfer_count"].get<int>() == 1);
}

namespace {
// A DMA-bound stream: load tile i, scale it, store it; `depth` rotating slots
// per pool, as the kernel API's pools place them.
Program stream(int tiles, int depth, int cols) {
  ProgramBuilder b;
  auto x = b.input("x", 128 * tiles, cols);
  auto o = b.output("o", 128 * tiles, cols);
  const std::int64_t tile_bytes = std::int64_t(cols) * 4;
  std::vector<BufferId> in_slots(depth, UINT32_MAX), out_slots(depth, UINT32_MAX);
  for (int i = 0; i < tiles; ++i) {
    const int slot = i % depth;
    if (in_slots[slot] != UINT32_MAX) b.program.release_buffer(in_slots[slot]);
    if (out_slots[slot] != UINT32_MAX) b.program.release_buffer(out_slots[slot]);
    in_slots[slot] = b.sbuf("in#" + std::to_string(i), 128, cols, Dtype::fp32, slot * tile_bytes);
    out_slots[slot] = b.sbuf("out#" + std::to_string(i), 128, cols, Dtype::fp32, (depth + slot) * tile_bytes);
    b.dma(b.all(in_slots[slot]), b.part(x, 128 * i, 128 * (i + 1), 0, cols));
    b.unary(Opcode::activation, Engine::scalar, b.all(out_slots[slot]), b.all(in_slots[slot]));
    b.dma(b.part(o, 128 * i, 128 * (i + 1), 0, cols), b.all(out_slots[slot]));
  }
  return std::move(b.program);
}
}  // namespace

TEST_CASE("pipeline depth 2 beats depth 1 on a DMA-bound stream, and the overlap shows") {
  const auto shallow = timing(stream(16, 1, 512));
  const auto deep = timing(stream(16, 2, 512));
  CHECK(deep.total_time_s < shallow.total_time_s);
  CHECK(deep.summary["dma_compute_overlap_percent"].get<double>() >
        shallow.summary["dma_compute_overlap_percent"].get<double>());
  CHECK(deep.summary["sbuf_peak_bytes_per_partition"].get<std::int64_t>() >
        shallow.summary["sbuf_peak_bytes_per_partition"].get<std::int64_t>());
}

TEST_CASE("timing-only mode gives exactly the functional mode's time") {
  const Program p = stream(4, 2, 256);
  SimOptions functional;
  HostIo io;
  io.inputs.push_back(std::vector<float>(128 * 4 * 256, 0.5f));
  const auto with_values = simulate(p, trn1(), functional, &io);
  SimOptions timing_only;
  timing_only.functional = false;
  timing_only.record_timeline = false;
  const auto without = simulate(p, trn1(), timing_only);
  REQUIRE(with_values.valid);
  CHECK(with_values.total_time_s == without.total_time_s);
  CHECK(with_values.cycles == without.cycles);
  CHECK(without.timeline.empty());
  CHECK(with_values.timeline.size() == p.size());
}

TEST_CASE("matmul costs max(64, N) PE cycles plus start-up, fp32 four times slower") {
  const TargetSpec& t = trn2();
  auto matmul_time = [&](Dtype dtype, int n) {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, dtype);
    auto mv = b.sbuf("mv", 128, n, dtype, 4096);
    auto ps = b.psum("ps", 128, n);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    auto mm = b.matmul(b.all(ps), b.all(st), b.all(mv), false);
    const auto r = timing(b.program, t);
    return r.timeline[mm].end_s - r.timeline[mm].start_s;
  };
  const double cycle = 1.0 / t.clock(Engine::tensor);
  CHECK(matmul_time(Dtype::bf16, 512) == doctest::Approx((512 + t.access_startup_cycles) * cycle));
  CHECK(matmul_time(Dtype::bf16, 16) == doctest::Approx((64 + t.access_startup_cycles) * cycle));
  CHECK(matmul_time(Dtype::fp32, 512) == doctest::Approx((4 * 512 + t.access_startup_cycles) * cycle));
}

TEST_CASE("a dependency on another engine pays the semaphore latency, one on the same engine does not") {
  const TargetSpec& t = trn2();
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 512);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 2048);
  auto d = b.sbuf("d", 128, 512, Dtype::fp32, 4096);
  auto first = b.memset(b.all(a), 1.0f, Engine::vector);
  auto same = b.copy(b.all(c), b.all(a), Engine::vector);
  auto other = b.copy(b.all(d), b.all(a), Engine::scalar);
  const auto r = timing(b.program, t);
  CHECK(entry(r, same).start_s == doctest::Approx(entry(r, first).end_s));
  CHECK(entry(r, other).start_s ==
        doctest::Approx(entry(r, first).end_s + t.cross_engine_dependency_cycles / t.clock(Engine::scalar)));
}

TEST_CASE("trn1's shared SBUF port serialises vector and GpSimd, trn2 runs them together") {
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 512);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 2048);
  auto v = b.memset(b.all(a), 1.0f, Engine::vector);
  auto g = b.memset(b.all(c), 2.0f, Engine::gpsimd);
  const auto on_trn1 = timing(b.program, trn1());
  const auto on_trn2 = timing(b.program, trn2());
  CHECK(entry(on_trn1, g).start_s >= entry(on_trn1, v).end_s);
  CHECK(entry(on_trn2, g).start_s == 0.0);
  (void)v;
}

TEST_CASE("summary carries the profile fields and MFU counts 2KMN per matmul") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 128, Dtype::bf16);
  auto y = b.input("y", 128, 512, Dtype::bf16);
  auto o = b.output("o", 128, 512);
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  auto ps = b.psum("ps", 128, 512);
  auto res = b.sbuf("res", 128, 512, Dtype::fp32, 2048);
  b.dma(b.all(st), b.all(x));
  b.dma(b.all(mv), b.all(y));
  b.matmul(b.all(ps), b.all(st), b.all(mv), false);
  b.copy(b.all(res), b.all(ps));
  b.dma(b.all(o), b.all(res));
  const auto r = timing(b.program);
  for (const char* key :
       {"total_time", "neuroncore_cycle_count", "mfu_estimated_percent", "mbu_estimated_percent",
        "tensor_engine_active_time_percent", "vector_engine_active_time_percent",
        "scalar_engine_active_time_percent", "gpsimd_engine_active_time_percent", "dma_active_time_percent",
        "hbm_read_bytes", "hbm_write_bytes", "dma_transfer_count", "dma_transfer_average_bytes",
        "sbuf_peak_bytes_per_partition", "psum_peak_banks", "tensor_engine_instruction_count",
        "dma_compute_overlap_percent", "engine_overlap_percent"})
    CHECK_MESSAGE(r.summary.contains(key), key);
  CHECK(r.summary["matmul_flops"].get<double>() == 2.0 * 128 * 128 * 512);
  const double mfu = 100.0 * 2.0 * 128 * 128 * 512 / trn1().peak_flops_16bit / r.total_time_s;
  CHECK(r.summary["mfu_estimated_percent"].get<double>() == doctest::Approx(mfu));
  CHECK(r.summary["hbm_read_bytes"].get<std::int64_t>() == 128 * 128 * 2 + 128 * 512 * 2);
  CHECK(r.summary["hbm_write_bytes"].get<std::int64_t>() == 128 * 512 * 4);
  CHECK(r.summary["dma_transfer_count"].get<int>() == 3);
  CHECK(r.summary["sbuf_peak_bytes_per_partition"].get<std::int64_t>() == 2048 + 2048);
  CHECK(r.summary["psum_peak_banks"].get<int>() == 1);
  CHECK(r.total_time_s > trn1().launch_overhead_s);
  REQUIRE(!r.hot_lines.empty());
  CHECK(r.hot_lines.front().busy_s >= r.hot_lines.back().busy_s);
}

TEST_CASE("overlap figures: DMA/compute overlap and engine overlap match a hand-built timeline") {
  const TargetSpec& t = trn2();
  ProgramBuilder b;
  auto x = b.input("x", 128, 2048);
  auto s = b.sbuf("s", 128, 2048);
  auto a = b.sbuf("a", 128, 512, Dtype::fp32, 8192);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 8192 + 2048);
  auto load = b.dma(b.all(s), b.all(x));  // independent of the two memsets
  auto v = b.memset(b.all(a), 1.0f, Engine::vector);
  auto g = b.memset(b.all(c), 1.0f, Engine::gpsimd);
  const auto r = timing(b.program, t);
  const double total = r.total_time_s;
  const auto& L = entry(r, load);
  const auto& V = entry(r, v);
  const auto& G = entry(r, g);
  const double both_engines = std::min(V.end_s, G.end_s) - std::max(V.start_s, G.start_s);
  const double compute_end = std::max(V.end_s, G.end_s);
  const double dma_with_compute = std::min(L.end_s, compute_end) - std::max(L.start_s, 0.0);
  CHECK(r.summary["engine_overlap_percent"].get<double>() == doctest::Approx(100.0 * both_engines / total));
  CHECK(r.summary["dma_compute_overlap_percent"].get<double>() ==
        doctest::Approx(100.0 * dma_with_compute / total));
  CHECK(r.summary["dma_active_time_percent"].get<double>() ==
        doctest::Approx(100.0 * (L.end_s - L.start_s) / total));
}

TEST_CASE("trn1's shared PSUM port serialises vector and scalar reads of PSUM, trn2 only within a bank") {
  // Two matmuls fill banks 0 and 1; the vector and scalar engines then read
  // either the same bank or one bank each.
  auto run = [](bool same_bank, const TargetSpec& t) {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto p = b.psum("p", 128, 1024);
    auto d1 = b.sbuf("d1", 128, 256, Dtype::fp32, 4096);
    auto d2 = b.sbuf("d2", 128, 256, Dtype::fp32, 8192);
    b.memset(b.all(st), 1.0f);
    b.matmul(b.part(p, 0, 128, 0, 256), b.all(st), b.part(st, 0, 128, 0, 128), false);
    b.matmul(b.part(p, 0, 128, 512, 768), b.all(st), b.part(st, 0, 128, 0, 128), false);
    auto v = b.copy(b.all(d1), b.part(p, 0, 128, 0, 256), Engine::vector);
    const int other = same_bank ? 0 : 512;
    auto s = b.copy(b.all(d2), b.part(p, 0, 128, other, other + 256), Engine::scalar);
    const auto r = timing(b.program, t);
    return entry(r, s).start_s >= entry(r, v).end_s || entry(r, v).start_s >= entry(r, s).end_s;
  };
  CHECK(run(true, trn1()));
  CHECK(run(false, trn1()));
  CHECK(run(true, trn2()));
  CHECK_FALSE(run(false, trn2()));
}

TEST_CASE("small transfers use fewer queues and leave the others free") {
  const TargetSpec& t = trn1();
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto row = b.input("row", 1, 64);
  auto s = b.sbuf("s", 128, 512);
  auto r1 = b.sbuf("r1", 1, 64, Dtype::fp32, 4096);
  auto r2 = b.sbuf("r2", 1, 64, Dtype::fp32, 8192);
  auto big = b.dma(b.all(s), b.all(x));
  auto one = b.dma(b.all(r1), b.all(row));
  auto two = b.dma(b.all(r2), b.all(row));
  const auto r = timing(b.program, t);
  CHECK(entry(r, big).dma_queue_count == t.dma_queues);
  CHECK(entry(r, one).dma_queue_count == 1);
  CHECK(entry(r, two).dma_queue != entry(r, one).dma_queue);
  // Both single-row loads wait for the big load's queues; they then run side by side.
  CHECK(entry(r, one).start_s == doctest::Approx(entry(r, two).start_s));
  std::size_t slices_of_one = 0;
  for (const auto& slice : r.dma_slices) slices_of_one += slice.instruction == one;
  CHECK(slices_of_one == 1);
}

TEST_CASE("a late stationary operand exposes its load, a ready one hides it under the previous matmul") {
  const TargetSpec& t = trn2();
  auto run = [&](bool late) {
    ProgramBuilder b;
    auto x = b.input("x", 128, 128, Dtype::bf16);
    auto a = b.sbuf("a", 128, 128, Dtype::bf16);
    auto st2 = b.sbuf("st2", 128, 128, Dtype::bf16, 256);
    auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 512);
    auto p = b.psum("p", 128, 512);
    b.memset(b.all(a), 1.0f);
    b.memset(b.all(mv), 1.0f);
    if (late)
      b.dma(b.all(st2), b.all(x));
    else
      b.memset(b.all(st2), 1.0f);
    auto first = b.matmul(b.all(p), b.all(a), b.all(mv), false);
    auto second = b.matmul(b.all(p), b.all(st2), b.all(mv), true);
    const auto r = timing(b.program, t);
    return std::pair{r.timeline[second].start_s - r.timeline[first].end_s,
                     r.summary["stationary_load_exposed_count"].get<int>()};
  };
  const auto [gap_ready, exposed_ready] = run(false);
  const auto [gap_late, exposed_late] = run(true);
  CHECK(gap_ready == doctest::Approx(0.0));
  CHECK(gap_late > 0.0);
  CHECK(exposed_late > exposed_ready);
}

TEST_CASE("a load that is ready early is not held behind an earlier-issued store that is ready later") {
  // stream(): per tile, load (3i), activation (3i+1), store (3i+2); depth 2 gives tile 1 its own slot.
  const auto r = timing(stream(4, 2, 2048));
  const InstructionId store0 = 2, load1 = 3;
  CHECK(entry(r, load1).start_s < entry(r, store0).start_s);
  CHECK(r.summary["dma_compute_overlap_percent"].get<double>() > 0.0);
}

namespace {
// Busy time of one vector-engine instruction `make` emits, on trn2.
double vector_busy(const std::function<InstructionId(ProgramBuilder&)>& make) {
  ProgramBuilder b;
  const InstructionId id = make(b);
  const auto r = timing(b.program, trn2());
  return entry(r, id).end_s - entry(r, id).start_s;
}
}  // namespace

TEST_CASE("trn2's vector performance modes: 4x and 2x only in the documented cases, 1x elsewhere") {
  const TargetSpec& t = trn2();
  const int n = 2048;
  const double cycle = 1.0 / t.clock(Engine::vector), startup = t.access_startup_cycles * cycle;
  auto copy = [&](Dtype src_dtype, Dtype dst_dtype, bool src_in_psum) {
    const int cols = src_in_psum ? 512 : n;  // a PSUM source within one bank
    return vector_busy([&](ProgramBuilder& b) {
      auto d = b.sbuf("d", 128, cols, dst_dtype, 0);
      const auto s =
          src_in_psum ? b.psum("s", 128, cols, 0, src_dtype) : b.sbuf("s", 128, cols, src_dtype, 16384);
      b.memset(b.all(s), 1.0f, Engine::scalar);
      return b.copy(b.all(d), b.all(s));
    });
  };
  // 16-bit, all in SBUF: 4x; fp32 anywhere: the base rate of one element per lane and cycle.
  CHECK(copy(Dtype::bf16, Dtype::bf16, false) == doctest::Approx((n / 4.0) * cycle + startup));
  CHECK(copy(Dtype::fp32, Dtype::fp32, false) == doctest::Approx(n * cycle + startup));
  CHECK(copy(Dtype::fp32, Dtype::bf16, false) == doctest::Approx(n * cycle + startup));
  // 16-bit with the source in PSUM: 2x.
  CHECK(copy(Dtype::bf16, Dtype::bf16, true) == doctest::Approx((512 / 2.0) * cycle + startup));
  // tensor_tensor on 16-bit SBUF operands: 2x of its 2N; a reduction: never faster.
  const double tt16 = vector_busy([&](ProgramBuilder& b) {
    auto a = b.sbuf("a", 128, n, Dtype::bf16, 0);
    auto c = b.sbuf("c", 128, n, Dtype::bf16, 8192);
    auto d = b.sbuf("d", 128, n, Dtype::bf16, 16384);
    b.memset(b.all(a), 1.0f, Engine::scalar);
    b.memset(b.all(c), 1.0f, Engine::scalar);
    return b.tensor_tensor(b.all(d), b.all(a), b.all(c), AluOp::add);
  });
  CHECK(tt16 == doctest::Approx(t.tensor_tensor_cycles_per_element * n / 2.0 * cycle + startup));
  // The roofline's peak is the best mode.
  CHECK(t.elements_per_s(Engine::vector, Dtype::bf16) == doctest::Approx(4 * 128 * t.clock(Engine::vector)));
  CHECK(t.elements_per_s(Engine::vector, Dtype::fp32) == doctest::Approx(128 * t.clock(Engine::vector)));
}

TEST_CASE("trn2's vector performance modes share a bus with GpSimd, the base rate does not") {
  auto overlap = [](Dtype dtype) {
    ProgramBuilder b;
    auto a = b.sbuf("a", 128, 2048, dtype, 0);
    auto c = b.sbuf("c", 128, 2048, dtype, 8192);
    auto g = b.sbuf("g", 128, 8192, Dtype::fp32, 16384);  // long enough to span the copy
    b.memset(b.all(a), 1.0f, Engine::scalar);
    auto v = b.copy(b.all(c), b.all(a), Engine::vector);
    auto s = b.memset(b.all(g), 2.0f, Engine::gpsimd);
    const auto r = timing(b.program, trn2());
    return entry(r, s).start_s < entry(r, v).end_s && entry(r, v).start_s < entry(r, s).end_s;
  };
  CHECK_FALSE(overlap(Dtype::bf16));
  CHECK(overlap(Dtype::fp32));
}

TEST_CASE("trn2's DMA transposer: at most 50% of the queues SBUF to SBUF, 90% from HBM") {
  const TargetSpec& t = trn2();
  auto data_time = [&](bool from_hbm) {
    ProgramBuilder b;
    auto x = b.input("x", 128, 128, Dtype::bf16);
    auto s = b.sbuf("s", 128, 128, Dtype::bf16);
    auto d = b.sbuf("d", 128, 128, Dtype::bf16, 4096);
    if (!from_hbm) b.dma(b.all(s), b.all(x));
    const auto id = b.dma(b.all(d), from_hbm ? b.all(x) : b.all(s), true);
    const auto r = timing(b.program, t);
    // The transfer starts once its descriptors exist; minus the fixed cost: the data part.
    return entry(r, id).end_s - entry(r, id).start_s - t.dma_fixed_cost_s;
  };
  const double bytes = 128.0 * 128 * 2;
  const double queues = t.dma_queue_bytes_per_s * t.dma_queues;
  CHECK(data_time(false) == doctest::Approx(bytes / (0.5 * queues)));
  CHECK(data_time(true) >= bytes / (0.9 * std::min(queues, t.hbm_bytes_per_s)) * (1 - 1e-9));
}

TEST_CASE("trn2's transposes wait for one of two descriptor generators, 600 ns each") {
  const TargetSpec& t = trn2();
  REQUIRE(t.dge_instances == 2);
  REQUIRE(t.dge_instruction_s == doctest::Approx(600e-9));
  const int count = 64;
  ProgramBuilder b;
  auto s = b.sbuf("s", 16, 128 * count, Dtype::bf16);
  auto d = b.sbuf("d", 128, 16 * count, Dtype::bf16, 128 * count * 2);
  b.memset(b.all(s), 1.0f);
  for (int i = 0; i < count; ++i)
    b.dma(b.part(d, 0, 128, 16 * i, 16 * i + 16), b.part(s, 0, 16, 128 * i, 128 * i + 128), true);
  const auto r = timing(b.program, t);
  CHECK(r.summary["dma_descriptor_generation_count"].get<int>() == count);
  // 64 small transposes: bound by the generators, not by the queues.
  CHECK(r.summary["kernel_time"].get<double>() >= count * t.dge_instruction_s / 2);
  // The critical path names the wait: descriptor generation, not a queue.
  const auto& waits = r.summary["critical_path"]["wait_percent"];
  CHECK(waits["dma_descriptor"].get<double>() > 50);
  CHECK(waits["dma_descriptor"].get<double>() > 5 * waits["dma_queue"].get<double>());
  // trn1 has no generator and counts none.
  CHECK(timing(b.program, trn1()).summary["dma_descriptor_generation_count"].get<int>() == 0);
}

TEST_CASE("a transpose outside the transposer's shape rules is element-wise, into HBM it is invalid") {
  auto transpose = [](int rows, int cols) {
    ProgramBuilder b;
    auto s = b.sbuf("s", rows, cols, Dtype::bf16);
    auto d = b.sbuf("d", cols, rows, Dtype::bf16, 4096);
    b.memset(b.all(s), 1.0f);
    b.dma(b.all(d), b.all(s), true);
    return timing(b.program, trn2());
  };
  // 128 rows x 128: blocks of 16 x 128, one DGE instruction per 16 source
  // partitions; 120 rows: not a multiple of 16, element by element.
  const auto blocked = transpose(128, 128), ragged = transpose(120, 128);
  CHECK(blocked.summary["dma_descriptor_generation_count"].get<int>() == 8);
  CHECK(ragged.summary["dma_descriptor_generation_count"].get<int>() == 0);
  CHECK(ragged.summary["kernel_time"].get<double>() > 5 * blocked.summary["kernel_time"].get<double>());

  ProgramBuilder b;
  auto s = b.sbuf("s", 128, 128, Dtype::bf16);
  auto out = b.output("out", 128, 128, Dtype::bf16);
  b.memset(b.all(s), 1.0f);
  b.dma(b.all(out), b.all(s), true);
  SimOptions options;
  options.functional = false;
  const auto r = simulate(b.program, trn2(), options);
  CHECK_FALSE(r.valid);
  CHECK(r.rule == "dma_transpose_destination");
}

TEST_CASE("one transposing copy of many blocks needs as many DGE instructions as one block") {
  const TargetSpec& t = trn2();
  const int blocks = 16;
  auto run = [&](bool one_transfer) {
    ProgramBuilder b;
    auto s = b.sbuf("s", 128, 128 * blocks, Dtype::bf16);
    auto d = b.sbuf("d", 128, 128 * blocks, Dtype::bf16, 128 * blocks * 2);
    b.memset(b.all(s), 1.0f);
    if (one_transfer) {
      b.dma(b.all(d), b.all(s), true);
    } else {
      for (int j = 0; j < blocks; ++j)
        b.dma(b.part(d, 0, 128, 128 * j, 128 * j + 128), b.part(s, 0, 128, 128 * j, 128 * j + 128), true);
    }
    return timing(b.program, t);
  };
  const auto one = run(true), many = run(false);
  CHECK(one.summary["dma_descriptor_generation_count"].get<int>() == 8);
  CHECK(many.summary["dma_descriptor_generation_count"].get<int>() == 8 * blocks);
  // The many small transfers are bound by the generators: 8 x 16 x 600 ns over two.
  CHECK(many.summary["kernel_time"].get<double>() >= 8 * blocks * t.dge_instruction_s / 2);
  CHECK(one.summary["kernel_time"].get<double>() < many.summary["kernel_time"].get<double>() / 2);
}

TEST_CASE("an activation with a row sum pays the accumulator read, about 64 scalar cycles") {
  auto busy = [](bool row_sum) {
    ProgramBuilder b;
    auto x = b.sbuf("x", 128, 1024);
    auto y = b.sbuf("y", 128, 1024, Dtype::fp32, 4096);
    auto sum = b.sbuf("sum", 128, 1, Dtype::fp32, 8192);
    b.memset(b.all(x), 1.0f);
    const auto id = b.activation(b.all(y), b.all(x), ActivationFunction::exp, 1.0f, ScalarOperand{},
                                 row_sum ? std::optional<View>(b.all(sum)) : std::nullopt);
    const auto r = timing(b.program);
    return entry(r, id).end_s - entry(r, id).start_s;
  };
  CHECK(busy(true) - busy(false) == doctest::Approx(64 / trn1().clock(Engine::scalar)));
}

TEST_CASE("a tensor_scalar power costs the engine's documented transcendental: 8N on vector, 4N on GpSimd") {
  // The NKI engine selection notes: the vector engine's reciprocal runs at
  // max(MIN_II, 8N), GpSimd's rsqrt at a quarter of the scalar engine's rate.
  auto busy = [](AluOp op0, Engine engine) {
    ProgramBuilder b;
    auto x = b.sbuf("x", 128, 1024);
    auto y = b.sbuf("y", 128, 1024, Dtype::fp32, 4096);
    b.memset(b.all(x), 2.0f);
    const auto id = b.tensor_scalar(b.all(y), b.all(x), op0, ScalarOperand{-1.0f}, AluOp::bypass,
                                    ScalarOperand{}, engine);
    const auto r = timing(b.program);
    return (entry(r, id).end_s - entry(r, id).start_s) * trn1().clock(engine);
  };
  const double startup = trn1().access_startup_cycles;
  CHECK(busy(AluOp::multiply, Engine::vector) == doctest::Approx(1024 + startup));
  CHECK(busy(AluOp::pow, Engine::vector) == doctest::Approx(8 * 1024 + startup));
  CHECK(busy(AluOp::pow, Engine::gpsimd) == doctest::Approx(4 * 1024 + startup));
}

namespace {

// Two bf16 matmuls of K = 64, M = 64, N = 512, the first reading partitions
// [0, 64), the second partitions `second_rows`, on the PE tiles given (the
// whole array by default). Returns the time from the first start to the last
// end, and the result.
struct PairRun {
  double span_s = 0;
  SimResult result;
  InstructionId first = 0, second = 0;
};
PairRun matmul_pair(PeTile first_tile, PeTile second_tile, int second_row, const TargetSpec& t) {
  ProgramBuilder b;
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  auto p1 = b.psum("p1", 64, 512);
  auto p2 = b.psum("p2", 64, 512, 2048);
  b.memset(b.all(st), 1.0f);
  b.memset(b.all(mv), 1.0f);
  PairRun run;
  run.first = b.matmul_on(first_tile, b.all(p1), b.part(st, 0, 64, 0, 64), b.part(mv, 0, 64, 0, 512), false);
  run.second = b.matmul_on(second_tile, b.all(p2), b.part(st, second_row, second_row + 64, 64, 128),
                           b.part(mv, second_row, second_row + 64, 0, 512), false);
  run.result = timing(b.program, t);
  const auto& a = entry(run.result, run.first);
  const auto& c = entry(run.result, run.second);
  run.span_s = std::max(a.end_s, c.end_s) - std::min(a.start_s, c.start_s);
  return run;
}

constexpr PeTile kTop{0, 64, 0, 128}, kBottom{64, 64, 0, 128}, kWhole{};

}  // namespace

TEST_CASE("two 64-row matmuls on disjoint PE row tiles run side by side, on the same rows they take turns") {
  for (const TargetSpec* t : {&trn1(), &trn2()}) {
    CAPTURE(t->name);
    const double duration = (512 + t->access_startup_cycles) / t->clock(Engine::tensor);
    const PairRun whole = matmul_pair(kWhole, kWhole, 64, *t);
    const PairRun disjoint = matmul_pair(kTop, kBottom, 64, *t);
    const PairRun same = matmul_pair(kTop, kTop, 0, *t);
    CHECK(whole.span_s >= 2 * duration * (1 - 1e-9));
    CHECK(same.span_s >= 2 * duration * (1 - 1e-9));
    // Side by side: the second starts one issue interval (the shortest PE
    // instruction) after the first, not after it ends.
    const double issue = (t->matmul_min_cycles + t->access_startup_cycles) / t->clock(Engine::tensor);
    CHECK(disjoint.span_s == doctest::Approx(duration + issue).scale(0));
    CHECK(disjoint.span_s < 0.65 * whole.span_s);  // (D + issue) / 2D
    CHECK(entry(disjoint.result, disjoint.second).start_s < entry(disjoint.result, disjoint.first).end_s);
    // The engine's active time is the union of its busy intervals, not their sum.
    const double total = disjoint.result.total_time_s;
    CHECK(disjoint.result.summary["tensor_engine_active_time_percent"].get<double>() ==
          doctest::Approx(100.0 * disjoint.span_s / total).scale(0));
  }
}

TEST_CASE("column tiles run side by side, tiles sharing PE cells take turns") {
  const TargetSpec& t = trn2();
  const double duration = (512 + t.access_startup_cycles) / t.clock(Engine::tensor);
  auto run = [&](PeTile first, PeTile second) {
    // K = 128 over every row; M = 64 each, results on PSUM partitions [0, 64) and [64, 128).
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
    auto p = b.psum("p", 128, 512);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    auto a = b.matmul_on(first, b.part(p, 0, 64, 0, 512), b.part(st, 0, 128, 0, 64), b.all(mv), false);
    auto c = b.matmul_on(second, b.part(p, 64, 128, 0, 512), b.part(st, 0, 128, 64, 128), b.all(mv), false);
    const auto r = timing(b.program, t);
    return std::max(entry(r, a).end_s, entry(r, c).end_s) -
           std::min(entry(r, a).start_s, entry(r, c).start_s);
  };
  const PeTile left{0, 128, 0, 64}, right{0, 128, 64, 64};
  CHECK(run(left, right) < 1.5 * duration);
  CHECK(run(PeTile{}, PeTile{}) >= 2 * duration * (1 - 1e-9));
  // The right half of the columns and all of them share cells: in turn.
  CHECK(run(left, PeTile{0, 128, 0, 128}) >= 2 * duration * (1 - 1e-9));
}

TEST_CASE("trn2's 32-row tiles run four matmuls side by side, each issue interval apart") {
  const TargetSpec& t = trn2();
  ProgramBuilder b;
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  b.memset(b.all(st), 1.0f);
  b.memset(b.all(mv), 1.0f);
  std::vector<InstructionId> mm;
  for (int k = 0; k < 4; ++k) {
    auto p = b.psum("p" + std::to_string(k), 32, 512, k * 2048);
    const auto row = static_cast<std::uint8_t>(32 * k);
    mm.push_back(b.matmul_on(PeTile{row, 32, 0, 128}, b.all(p), b.part(st, row, row + 32, 0, 32),
                             b.part(mv, row, row + 32, 0, 512), false));
  }
  const auto r = timing(b.program, t);
  const double issue = (t.matmul_min_cycles + t.access_startup_cycles) / t.clock(Engine::tensor);
  const double duration = (512 + t.access_startup_cycles) / t.clock(Engine::tensor);
  for (int k = 1; k < 4; ++k)
    CHECK(entry(r, mm[k]).start_s - entry(r, mm[k - 1]).start_s == doctest::Approx(issue).scale(0));
  CHECK(entry(r, mm[3]).end_s - entry(r, mm[0]).start_s == doctest::Approx(3 * issue + duration).scale(0));
}

TEST_CASE("tiled matmuls of the minimum size gain nothing: the issue interval is the shortest instruction") {
  const TargetSpec& t = trn2();
  auto run = [&](bool tiled) {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 64, Dtype::bf16, 256);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    InstructionId first = 0, last = 0;
    for (int k = 0; k < 2; ++k) {
      auto p = b.psum("p" + std::to_string(k), 64, 64, k * 2048);
      const auto row = static_cast<std::uint8_t>(64 * k);
      last = b.matmul_on(tiled ? PeTile{row, 64, 0, 128} : PeTile{}, b.all(p),
                         b.part(st, row, row + 64, 0, 64), b.part(mv, row, row + 64, 0, 64), false);
      if (k == 0) first = last;
    }
    const auto r = timing(b.program, t);
    return entry(r, last).end_s - entry(r, first).start_s;
  };
  CHECK(run(true) == doctest::Approx(run(false)).scale(0));
}

TEST_CASE("a new stationary operand on a PE tile waits for that tile's previous matmul, not the others'") {
  const TargetSpec& t = trn2();
  // A long matmul on the top rows, then one on the bottom rows with a new
  // stationary operand: its load overlaps nothing it has to wait for.
  ProgramBuilder b;
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  auto p1 = b.psum("p1", 64, 512);
  auto p2 = b.psum("p2", 64, 512, 2048);
  auto p3 = b.psum("p3", 64, 512, 4096);
  b.memset(b.all(st), 1.0f);
  b.memset(b.all(mv), 1.0f);
  auto top = b.matmul_on(kTop, b.all(p1), b.part(st, 0, 64, 0, 64), b.part(mv, 0, 64, 0, 512), false);
  auto bottom =
      b.matmul_on(kBottom, b.all(p2), b.part(st, 64, 128, 64, 128), b.part(mv, 64, 128, 0, 512), false);
  // Back on the top rows with another stationary: after the top tile's matmul.
  auto again = b.matmul_on(kTop, b.all(p3), b.part(st, 0, 64, 64, 128), b.part(mv, 0, 64, 0, 512), false);
  const auto r = timing(b.program, t);
  CHECK(entry(r, bottom).start_s < entry(r, top).end_s);
  CHECK(entry(r, again).start_s >= entry(r, top).end_s);
  CHECK(entry(r, again).start_s < entry(r, bottom).end_s);
}

TEST_CASE(
    "tensor_tensor_scan costs max(64, 2N) vector cycles wherever its inputs are, and runs on vector only") {
  auto busy = [](int n, bool psum_input, const TargetSpec& t) {
    ProgramBuilder b;
    auto a = b.sbuf("a", 128, n);
    auto x = b.sbuf("x", 128, n, Dtype::fp32, 8192);
    auto h = b.sbuf("h", 128, n, Dtype::fp32, 16384);
    auto p = b.psum("p", 128, n);
    b.memset(b.all(a), 1.0f);
    b.memset(psum_input ? b.all(p) : b.all(x), 1.0f);
    const auto id = b.scan(b.all(h), b.all(a), psum_input ? b.all(p) : b.all(x), ScalarOperand{});
    const auto r = timing(b.program, t);
    return entry(r, id).end_s - entry(r, id).start_s;
  };
  for (const TargetSpec* t : {&trn1(), &trn2()}) {
    const double cycle = 1 / t->clock(Engine::vector);
    CHECK(busy(512, false, *t) == doctest::Approx((2 * 512 + t->access_startup_cycles) * cycle));
    CHECK(busy(512, true, *t) == doctest::Approx((2 * 512 + t->access_startup_cycles) * cycle));
    CHECK(busy(16, false, *t) == doctest::Approx((64 + t->access_startup_cycles) * cycle));
  }
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 64);
  b.memset(b.all(a), 1.0f);
  b.scan(b.all(a), b.all(a), b.all(a), ScalarOperand{}, AluOp::multiply, AluOp::add, Engine::gpsimd);
  SimOptions options;
  options.functional = false;
  const SimResult r = simulate(b.program, trn1(), options);
  CHECK_FALSE(r.valid);
  CHECK(r.error.find("tensor_tensor_scan cannot run on the gpsimd engine") != std::string::npos);
}
