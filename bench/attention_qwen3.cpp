// Attention with the shapes of Qwen3-0.6B (head_dim 128, 16 query heads, 8 kv
// heads, causal, bf16) on one simulated NeuronCore: the naive baseline (score
// matrix through HBM) against flash attention, at sequence lengths 1K..16K.
//
//   bench_attention_qwen3 [--target trn1] [--flash kv_tile,q_tile,pipeline_depth,unroll_factor]
//                         [--sweep] [--max-seq N]
//
// Prints per length: simulated latency, MFU, HBM bytes read+written, the
// speedup, and the wall time and instruction count of each simulation
// (timing-only mode, as a tuning run times the full shape). --sweep also
// times every flash configuration at the longest length.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

using namespace autotune;
using namespace autotune::kernels;

namespace {

struct Timed {
  sim::SimResult result;
  std::size_t instructions = 0;
  double trace_s = 0, simulate_s = 0;
};

Timed time_variant(const FamilySpec& family, const std::string& variant, const Shape& shape,
                   const ParamValues& params, const sim::TargetSpec& target) {
  using Clock = std::chrono::steady_clock;
  Timed t;
  const auto t0 = Clock::now();
  const sim::Program program =
      trace_program(family, family.variant(variant), shape, sim::Dtype::bf16, params, target);
  const auto t1 = Clock::now();
  t.result = sim::simulate(program, target, sim::SimOptions{false, false});
  const auto t2 = Clock::now();
  t.instructions = program.size();
  t.trace_s = std::chrono::duration<double>(t1 - t0).count();
  t.simulate_s = std::chrono::duration<double>(t2 - t1).count();
  return t;
}

double summary_number(const sim::SimResult& r, const char* key) {
  return r.summary.contains(key) && r.summary[key].is_number() ? r.summary[key].get<double>() : 0.0;
}

ParamValues defaults_of(const VariantSpec& v) {
  ParamValues p;
  for (const auto& spec : v.params) p[spec.name] = spec.default_value;
  return p;
}

void print_row(const char* label, const Timed& t) {
  if (!t.result.valid) {
    std::printf("  %-34s invalid: %s\n", label, t.result.error.c_str());
    return;
  }
  const double hbm = summary_number(t.result, "hbm_read_bytes") + summary_number(t.result, "hbm_write_bytes");
  std::printf(
      "  %-34s %10.3f ms  MFU %5.1f%%  HBM %9.1f MB  PE %5.1f%%  ACT %5.1f%%  DVE %5.1f%%  DMA %5.1f%%  "
      "[%zu instr, trace %.2f s, sim %.2f s]\n",
      label, t.result.total_time_s * 1e3, summary_number(t.result, "mfu_estimated_percent"), hbm / 1e6,
      summary_number(t.result, "tensor_engine_active_time_percent"),
      summary_number(t.result, "scalar_engine_active_time_percent"),
      summary_number(t.result, "vector_engine_active_time_percent"),
      summary_number(t.result, "dma_active_time_percent"), t.instructions, t.trace_s, t.simulate_s);
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_name = "trn1";
  ParamValues flash;
  bool sweep = false;
  std::int64_t max_seq = 16384;
  const FamilySpec& family = family_registry().get("attention");
  flash = defaults_of(family.variant("flash"));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--target") && i + 1 < argc) {
      target_name = argv[++i];
    } else if (!std::strcmp(argv[i], "--flash") && i + 1 < argc) {
      int kv, q, depth, unroll;
      if (std::sscanf(argv[++i], "%d,%d,%d,%d", &kv, &q, &depth, &unroll) != 4) {
        std::fprintf(stderr, "--flash takes kv_tile,q_tile,pipeline_depth,unroll_factor\n");
        return 2;
      }
      flash = {{"kv_tile", kv}, {"q_tile", q}, {"pipeline_depth", depth}, {"unroll_factor", unroll}};
    } else if (!std::strcmp(argv[i], "--sweep")) {
      sweep = true;
    } else if (!std::strcmp(argv[i], "--max-seq") && i + 1 < argc) {
      max_seq = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--target T] [--flash kv,q,depth,unroll] [--sweep] [--max-seq N]\n",
                   argv[0]);
      return 2;
    }
  }
  const sim::TargetSpec target = sim::load_target(target_name);
  const ParamValues naive = defaults_of(family.variant("naive"));
  std::printf(
      "attention, Qwen3-0.6B shapes (head_dim 128, 16 q heads, 8 kv heads, causal, bf16), target %s\n",
      target.name.c_str());
  std::printf("flash parameters: kv_tile %lld, q_tile %lld, pipeline_depth %lld, unroll_factor %lld\n",
              (long long)flash.at("kv_tile"), (long long)flash.at("q_tile"),
              (long long)flash.at("pipeline_depth"), (long long)flash.at("unroll_factor"));
  Shape shape = family.default_shape;
  for (std::int64_t seq = 1024; seq <= max_seq; seq *= 2) {
    shape["seq"] = seq;
    std::printf("seq %lld: roofline bound %.3f ms, compulsory HBM %.1f MB\n", (long long)seq,
                roofline_bound_s(family, shape, sim::Dtype::bf16, target) * 1e3,
                family.hbm_bytes(shape, sim::Dtype::bf16) / 1e6);
    const Timed n = time_variant(family, "naive", shape, naive, target);
    const Timed f = time_variant(family, "flash", shape, flash, target);
    print_row("naive", n);
    print_row("flash", f);
    if (n.result.valid && f.result.valid)
      std::printf("  speedup flash / naive: %.2fx\n", n.result.total_time_s / f.result.total_time_s);
  }
  if (sweep) {
    shape["seq"] = max_seq;
    std::printf("flash sweep at seq %lld (kv_tile q_tile pipeline_depth unroll_factor)\n",
                (long long)max_seq);
    const VariantSpec& v = family.variant("flash");
    for (auto kv : v.find_param("kv_tile")->values)
      for (auto q : v.find_param("q_tile")->values)
        for (auto depth : v.find_param("pipeline_depth")->values)
          for (auto unroll : v.find_param("unroll_factor")->values) {
            const ParamValues p{
                {"kv_tile", kv}, {"q_tile", q}, {"pipeline_depth", depth}, {"unroll_factor", unroll}};
            char label[64];
            std::snprintf(label, sizeof label, "%lld %lld %lld %lld", (long long)kv, (long long)q,
                          (long long)depth, (long long)unroll);
            print_row(label, time_variant(family, "flash", shape, p, target));
          }
  }
  return 0;
}
