// The schedule's critical path on hand-built programs whose path is known by
// construction: what carries it, what it waits on, and that it adds up.
#include <doctest/doctest.h>

#include <numeric>

#include "sim/simulator.hpp"
#include "tests/unit/sim/program_builder.hpp"

using namespace autotune::sim;
using autotune::sim::testing::ProgramBuilder;

namespace {

const TargetSpec& trn1() {
  static const TargetSpec t = autotune::sim::testing::target("trn1");
  return t;
}
const TargetSpec& trn2() {
  static const TargetSpec t = autotune::sim::testing::target("trn2");
  return t;
}

SimResult timing(const Program& p, const TargetSpec& t = trn1()) {
  SimOptions options;
  options.functional = false;
  options.record_timeline = false;  // the path is there in timing-only mode too
  SimResult r = simulate(p, t, options);
  REQUIRE_MESSAGE(r.valid, r.error);
  return r;
}

double sum(const auto& values) { return std::accumulate(values.begin(), values.end(), 0.0); }
double busy(const CriticalPath& p, Engine e) { return p.busy_s[static_cast<std::size_t>(e)]; }
double wait(const CriticalPath& p, PathWait w) { return p.wait_s[static_cast<std::size_t>(w)]; }
double reached(const CriticalPath& p, PathStep s) { return p.reached_by_s[static_cast<std::size_t>(s)]; }
double kernel_time(const SimResult& r, const TargetSpec& t) { return r.total_time_s - t.launch_overhead_s; }

// Busy time and waits partition the path, and the path is the kernel time;
// so do the waits by engine and the path by how each step was reached; the
// JSON's shares add up to 100.
void check_adds_up(const SimResult& r, const TargetSpec& t) {
  const CriticalPath& p = r.critical_path;
  CHECK(p.length_s == doctest::Approx(kernel_time(r, t)).epsilon(1e-9));
  CHECK(sum(p.busy_s) + sum(p.wait_s) == doctest::Approx(p.length_s).epsilon(1e-9));
  CHECK(sum(p.waiting_s) == doctest::Approx(sum(p.wait_s)).epsilon(1e-9));
  CHECK(sum(p.reached_by_s) == doctest::Approx(p.length_s).epsilon(1e-9));
  for (double w : p.wait_s) CHECK(w >= 0.0);
  const auto& json = r.summary.at("critical_path");
  double percent = 0;
  for (const auto& [k, v] : json.at("busy_percent").items()) percent += v.get<double>();
  for (const auto& [k, v] : json.at("wait_percent").items()) percent += v.get<double>();
  CHECK(percent == doctest::Approx(100.0).epsilon(1e-9));
  double reached_percent = 0;
  for (const auto& [k, v] : json.at("reached_by_percent").items()) reached_percent += v.get<double>();
  CHECK(reached_percent == doctest::Approx(100.0).epsilon(1e-9));
}

// A stream: load tile i, scale it on the scalar engine, store it; `depth`
// rotating slots for the input and the output.
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

TEST_CASE("critical path: one transfer is its data time plus its fixed cost") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 2048);
  auto s = b.sbuf("s", 128, 2048);
  b.dma(b.all(s), b.all(x));
  const auto r = timing(b.program);
  check_adds_up(r, trn1());
  const CriticalPath& p = r.critical_path;
  CHECK(p.instructions == 1);
  CHECK(wait(p, PathWait::dma_fixed) == doctest::Approx(trn1().dma_fixed_cost_s).epsilon(1e-9));
  CHECK(busy(p, Engine::dma) == doctest::Approx(p.length_s - trn1().dma_fixed_cost_s).epsilon(1e-9));
  CHECK(reached(p, PathStep::start) == doctest::Approx(p.length_s));
  CHECK(p.links.empty());
}

TEST_CASE(
    "critical path: a DMA-bound stream at depth 1 runs through its transfers and the reuse of its slots") {
  const auto r = timing(stream(8, 1, 2048));
  check_adds_up(r, trn1());
  const CriticalPath& p = r.critical_path;
  const double dma = busy(p, Engine::dma) + wait(p, PathWait::dma_fixed) + wait(p, PathWait::dma_queue);
  CHECK(dma > 0.5 * p.length_s);
  CHECK(dma > busy(p, Engine::scalar));
  // Each tile's load waits for the previous tile's activation to have read
  // the slot (write after read), and each activation for the store of the
  // previous output: much of the path is reached through buffer reuse.
  CHECK(reached(p, PathStep::buffer) > 0.25 * p.length_s);
  bool buffer_link = false;
  for (const PathLink& link : p.links)
    buffer_link = buffer_link || (link.kind == DependencyKind::buffer && link.waiter.engine == Engine::dma &&
                                  link.waits_on.engine == Engine::scalar);
  CHECK(buffer_link);  // "dma dma_copy waits on scalar activation (buffer)"

  // With a slot per tile nothing is reused: no step is reached through a buffer.
  const auto fresh = timing(stream(8, 8, 2048));
  check_adds_up(fresh, trn1());
  CHECK(reached(fresh.critical_path, PathStep::buffer) == 0.0);
  CHECK(fresh.total_time_s < r.total_time_s);
}

TEST_CASE("critical path: a long scalar chain after one load is carried by the scalar engine") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto t = b.sbuf("t", 128, 512);
  auto u = b.sbuf("u", 128, 512, Dtype::fp32, 4096);
  b.dma(b.all(t), b.all(x));
  for (int i = 0; i < 40; ++i)
    b.unary(Opcode::activation, Engine::scalar, b.all(i % 2 ? t : u), b.all(i % 2 ? u : t));
  const auto r = timing(b.program);
  check_adds_up(r, trn1());
  const CriticalPath& p = r.critical_path;
  CHECK(p.instructions == 41);
  CHECK(busy(p, Engine::scalar) > 0.5 * p.length_s);
  CHECK(busy(p, Engine::scalar) > busy(p, Engine::dma) + wait(p, PathWait::dma_fixed));
  // The first activation waits on the load (data); the others follow it on the scalar engine.
  REQUIRE(p.links.size() == 1);
  CHECK(p.links[0].waiter.engine == Engine::scalar);
  CHECK(p.links[0].waiter.opcode == Opcode::activation);
  CHECK(p.links[0].waits_on.engine == Engine::dma);
  CHECK(p.links[0].kind == DependencyKind::data);
  CHECK(reached(p, PathStep::engine_order) > 0.5 * p.length_s);
  REQUIRE(!p.lines.empty());
  CHECK(p.lines[0].site.engine == Engine::scalar);  // the activation's source line is the hottest on the path
  CHECK(p.startup_s > 0.0);
  CHECK(p.startup_s < busy(p, Engine::scalar));
  const auto& links = r.summary.at("critical_path").at("links");
  REQUIRE(links.size() == 1);
  CHECK(links[0].at("kind") == "data");
  CHECK(links[0].at("waits_on").at("source").get<std::string>().find("critical_path_test.cpp:") !=
        std::string::npos);
}

TEST_CASE("critical path: hand-offs between engines pay a semaphore each, on data and on buffer reuse") {
  // vector -> scalar -> vector -> ... each reading the other's result: every
  // hand-off is a data dependency across engines.
  const TargetSpec& t = trn2();  // no shared ports
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 512);
  auto c = b.sbuf("c", 128, 512, Dtype::fp32, 4096);
  b.memset(b.all(a), 1.0f, Engine::vector);
  constexpr int kHandoffs = 10;
  for (int i = 0; i < kHandoffs; ++i)
    b.copy(b.all(i % 2 ? a : c), b.all(i % 2 ? c : a), i % 2 ? Engine::vector : Engine::scalar);
  const auto r = timing(b.program, t);
  check_adds_up(r, t);
  const CriticalPath& p = r.critical_path;
  CHECK(p.instructions == kHandoffs + 1);
  const double vector_semaphore = t.cross_engine_dependency_cycles / t.clock(Engine::vector);
  const double scalar_semaphore = t.cross_engine_dependency_cycles / t.clock(Engine::scalar);
  CHECK(wait(p, PathWait::semaphore) ==
        doctest::Approx(kHandoffs / 2 * (vector_semaphore + scalar_semaphore)).epsilon(1e-9));
  CHECK(wait(p, PathWait::buffer) == 0.0);

  // The scalar engine reads a tile the vector engine then overwrites: the
  // overwrite waits for the read (write after read) and its semaphore.
  ProgramBuilder w;
  auto tile = w.sbuf("tile", 128, 2048);
  auto out = w.sbuf("out", 128, 2048, Dtype::fp32, 8192);
  w.memset(w.all(tile), 1.0f, Engine::vector);
  w.copy(w.all(out), w.all(tile), Engine::scalar);
  w.memset(w.all(tile), 2.0f, Engine::vector);
  const auto reuse = timing(w.program, t);
  check_adds_up(reuse, t);
  const CriticalPath& q = reuse.critical_path;
  CHECK(wait(q, PathWait::buffer) == doctest::Approx(vector_semaphore).epsilon(1e-9));
  CHECK(wait(q, PathWait::semaphore) == doctest::Approx(scalar_semaphore).epsilon(1e-9));
  REQUIRE(!q.links.empty());
  bool found = false;
  for (const PathLink& link : q.links)
    found = found || (link.kind == DependencyKind::buffer && link.waiter.engine == Engine::vector &&
                      link.waits_on.engine == Engine::scalar);
  CHECK(found);
  CHECK(reached(q, PathStep::buffer) > 0.0);
}

TEST_CASE("critical path: an instruction held by a shared port waits on the port") {
  // trn1: vector and GpSimd share the SBUF port; two independent instructions
  // touching SBUF run one after the other.
  REQUIRE(trn1().vector_gpsimd_share_sbuf_port);
  ProgramBuilder b;
  auto a = b.sbuf("a", 128, 2048);
  auto c = b.sbuf("c", 128, 2048, Dtype::fp32, 8192);
  b.memset(b.all(a), 1.0f, Engine::vector);
  b.memset(b.all(c), 2.0f, Engine::gpsimd);
  const auto r = timing(b.program);
  check_adds_up(r, trn1());
  const CriticalPath& p = r.critical_path;
  CHECK(wait(p, PathWait::port) > 0.0);
  CHECK(p.waiting_s[static_cast<std::size_t>(Engine::gpsimd)] +
            p.waiting_s[static_cast<std::size_t>(Engine::vector)] ==
        doctest::Approx(wait(p, PathWait::port)).epsilon(1e-9));
}

TEST_CASE("critical path: transposes on the tensor engine are counted apart") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 128, Dtype::bf16);
  auto s = b.sbuf("s", 128, 128, Dtype::bf16);
  b.dma(b.all(s), b.all(x));
  for (int i = 0; i < 8; ++i) {
    auto p = b.psum("p" + std::to_string(i), 128, 128, i * 512);
    b.transpose(b.all(p), b.all(s));
  }
  const auto r = timing(b.program);
  check_adds_up(r, trn1());
  const CriticalPath& p = r.critical_path;
  CHECK(p.tensor_transpose_s > 0.0);
  CHECK(p.tensor_transpose_s == doctest::Approx(busy(p, Engine::tensor)).epsilon(1e-9));
}

TEST_CASE(
    "critical path: matmuls side by side on PE tiles chain through the cells or issue slot they waited for") {
  for (const TargetSpec* t : {&trn1(), &trn2()}) {
    CAPTURE(t->name);
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
    auto res = b.sbuf("res", 64, 512, Dtype::fp32, 2048);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    const PeTile top{0, 64, 0, 128}, bottom{64, 64, 0, 128};
    // Matmuls alternating between the two row tiles; the copy reads only the
    // last result, so the path runs back through tiles that overlapped.
    std::vector<InstructionId> mm;
    BufferId last_psum = 0;
    for (int k = 0; k < 4; ++k) {
      last_psum = b.psum("p" + std::to_string(k), 64, 512, k * 2048);
      const bool low = k % 2 == 1;
      const int row = low ? 64 : 0;
      mm.push_back(b.matmul_on(low ? bottom : top, b.all(last_psum), b.part(st, row, row + 64, 0, 64),
                               b.part(mv, row, row + 64, 0, 512), false));
    }
    b.copy(b.all(res), b.all(last_psum));
    SimOptions options;
    options.functional = false;
    options.record_timeline = true;
    const SimResult r = simulate(b.program, *t, options);
    REQUIRE_MESSAGE(r.valid, r.error);
    CHECK(r.timeline[mm[1]].start_s < r.timeline[mm[0]].end_s);  // side by side
    CHECK(r.timeline[mm[3]].start_s < r.timeline[mm[2]].end_s);
    check_adds_up(r, *t);
    const CriticalPath& p = r.critical_path;
    // The path's tensor time is no more than the engine's active time (the
    // union of its busy intervals): overlapping matmuls are not counted twice.
    const double active_s =
        r.summary["tensor_engine_active_time_percent"].get<double>() / 100 * r.total_time_s;
    CHECK(busy(p, Engine::tensor) <= active_s * (1 + 1e-9));
    CHECK(busy(p, Engine::tensor) < 4 * (r.timeline[mm[0]].end_s - r.timeline[mm[0]].start_s));
    CHECK(reached(p, PathStep::engine_order) > 0.0);
  }
}
