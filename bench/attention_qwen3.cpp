// Attention with the shapes of Qwen3-0.6B (head_dim 128, 16 query heads, 8 kv
// heads, causal, bf16) on one simulated NeuronCore, trn1 and trn2: the naive
// baseline (score matrix through HBM), flash attention at its tuned point,
// cte (the NKI library's attention_cte) at the library's defaults and
// flash_banked at the configuration the loop converges to per target, at
// sequence lengths 1K..32K.
//
//   bench_attention_qwen3 [--target T] [--flash kv_tile,q_tile,pipeline_depth,unroll_factor]
//                         [--banked kv_tile,q_tiles,pipeline_depth,dma_transpose,stats_on_gpsimd,
//                                   evacuate_on_scalar[,pe_row_tiles]]
//                         [--sweep] [--max-seq N] [--head-dim D] [--kv-heads N] [--no-naive]
//                         [--no-cte] [--json OUT|-]
//
// Prints per target and length: simulated latency, MFU, HBM bytes, engine
// activity and the wall time and instruction count of each simulation
// (timing-only mode, as a tuning run times the full shape), then one table
// of latency and MFU. --sweep also times every flash configuration at the
// longest length on the first target. --json writes every timed row (target,
// seq, variant, params, valid, error, latency_s, mfu_percent) as one array;
// with `-` it goes to stdout and the text to stderr.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
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

FILE* text_out = stdout;  // stderr when --json - takes stdout

// An invalid configuration's reason in a table cell: the resource it overflows (SBUF, PSUM), else the
// validator's rule (sim/validate.hpp).
std::string invalid_reason(const std::string& rule) {
  if (rule.rfind("sbuf", 0) == 0) return "SBUF";
  if (rule.rfind("psum", 0) == 0) return "PSUM";
  return rule.empty() ? "does not fit" : rule;
}

void print_row(const char* label, const Timed& t) {
  if (!t.result.valid) {
    std::fprintf(text_out, "  %-34s invalid: %s\n", label, t.result.error.c_str());
    return;
  }
  const double hbm = summary_number(t.result, "hbm_read_bytes") + summary_number(t.result, "hbm_write_bytes");
  std::fprintf(
      text_out,
      "  %-34s %10.3f ms  MFU %5.1f%%  HBM %9.1f MB  PE %5.1f%%  ACT %5.1f%%  DVE %5.1f%%  DMA %5.1f%%  "
      "[%zu instr, trace %.2f s, sim %.2f s]\n",
      label, t.result.total_time_s * 1e3, summary_number(t.result, "mfu_estimated_percent"), hbm / 1e6,
      summary_number(t.result, "tensor_engine_active_time_percent"),
      summary_number(t.result, "scalar_engine_active_time_percent"),
      summary_number(t.result, "vector_engine_active_time_percent"),
      summary_number(t.result, "dma_active_time_percent"), t.instructions, t.trace_s, t.simulate_s);
}

}  // namespace

// flash_banked's configuration per target: what the loop converges to at 16K
// (trn2: every P^T on the DMA transposer; trn1, which has none: on the
// tensor engine). --banked overrides it for both.
ParamValues banked_for(const std::string& target) {
  const bool trn2 = target == "trn2";
  return {{"kv_tile", 2048},
          {"q_tiles", 8},
          {"pipeline_depth", trn2 ? 5 : 4},
          {"dma_transpose", trn2 ? 4 : 0},
          {"stats_on_gpsimd", 1},
          {"evacuate_on_scalar", 0},
          {"pe_row_tiles", 1}};
}

int main(int argc, char** argv) {
  std::vector<std::string> targets = {"trn1", "trn2"};
  ParamValues flash{{"kv_tile", 512}, {"q_tile", 128}, {"pipeline_depth", 2}, {"unroll_factor", 1}};
  std::optional<ParamValues> banked;
  bool sweep = false, with_naive = true, with_cte = true;
  std::string json_path;
  std::int64_t max_seq = 32768, head_dim = 128, kv_heads = 8;
  const FamilySpec& family = family_registry().get("attention");
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--target") && i + 1 < argc) {
      targets = {argv[++i]};
    } else if (!std::strcmp(argv[i], "--flash") && i + 1 < argc) {
      int kv, q, depth, unroll;
      if (std::sscanf(argv[++i], "%d,%d,%d,%d", &kv, &q, &depth, &unroll) != 4) {
        std::fprintf(stderr, "--flash takes kv_tile,q_tile,pipeline_depth,unroll_factor\n");
        return 2;
      }
      flash = {{"kv_tile", kv}, {"q_tile", q}, {"pipeline_depth", depth}, {"unroll_factor", unroll}};
    } else if (!std::strcmp(argv[i], "--banked") && i + 1 < argc) {
      int kv, q, depth, t, g, e, r = 1;
      const int n = std::sscanf(argv[++i], "%d,%d,%d,%d,%d,%d,%d", &kv, &q, &depth, &t, &g, &e, &r);
      if (n != 6 && n != 7) {
        std::fprintf(stderr,
                     "--banked takes kv_tile,q_tiles,pipeline_depth,dma_transpose,stats_on_gpsimd,"
                     "evacuate_on_scalar[,pe_row_tiles]\n");
        return 2;
      }
      banked = ParamValues{{"kv_tile", kv},      {"q_tiles", q},         {"pipeline_depth", depth},
                           {"dma_transpose", t}, {"stats_on_gpsimd", g}, {"evacuate_on_scalar", e},
                           {"pe_row_tiles", r}};
    } else if (!std::strcmp(argv[i], "--sweep")) {
      sweep = true;
    } else if (!std::strcmp(argv[i], "--no-naive")) {
      with_naive = false;
    } else if (!std::strcmp(argv[i], "--no-cte")) {
      with_cte = false;
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
      if (json_path == "-") text_out = stderr;
    } else if (!std::strcmp(argv[i], "--max-seq") && i + 1 < argc) {
      max_seq = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--head-dim") && i + 1 < argc) {
      head_dim = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--kv-heads") && i + 1 < argc) {
      kv_heads = std::atoll(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--target T] [--flash kv,q,depth,unroll] [--banked kv,q,depth,t,g,e[,r]] [--sweep] "
          "[--max-seq N] [--head-dim D] [--kv-heads N] [--no-naive] [--no-cte] [--json OUT|-]\n",
          argv[0]);
      return 2;
    }
  }
  const ParamValues naive = defaults_of(family.variant("naive"));
  const ParamValues cte_params = defaults_of(family.variant("cte"));
  Shape shape = family.default_shape;
  shape["head_dim"] = head_dim;
  shape["kv_heads"] = kv_heads;
  std::string table;
  nlohmann::json rows = nlohmann::json::array();
  auto record = [&rows](const std::string& target, std::int64_t seq, const char* variant,
                        const ParamValues& params, const std::optional<Timed>& t) {
    if (!t) return;
    nlohmann::json row{{"target", target},
                       {"seq", seq},
                       {"variant", variant},
                       {"params", params},
                       {"valid", t->result.valid}};
    if (t->result.valid) {
      row["latency_s"] = t->result.total_time_s;
      row["mfu_percent"] = summary_number(t->result, "mfu_estimated_percent");
    } else {
      row["error"] = t->result.error;
      row["rule"] = t->result.rule;
    }
    rows.push_back(std::move(row));
  };
  for (const std::string& target_name : targets) {
    const sim::TargetSpec target = sim::load_target(target_name);
    const ParamValues banked_params = banked ? *banked : banked_for(target.name);
    std::fprintf(text_out, "attention (head_dim %lld, 16 q heads, %lld kv heads, causal, bf16), target %s\n",
                 (long long)head_dim, (long long)kv_heads, target.name.c_str());
    for (std::int64_t seq = 1024; seq <= max_seq; seq *= 2) {
      shape["seq"] = seq;
      std::fprintf(text_out, "seq %lld: roofline bound %.3f ms, compulsory HBM %.1f MB\n", (long long)seq,
                   roofline_bound_s(family, shape, sim::Dtype::bf16, target) * 1e3,
                   family.hbm_bytes(shape, sim::Dtype::bf16) / 1e6);
      std::optional<Timed> n;
      if (with_naive) n = time_variant(family, "naive", shape, naive, target);
      const Timed f = time_variant(family, "flash", shape, flash, target);
      std::optional<Timed> c;
      if (with_cte) c = time_variant(family, "cte", shape, cte_params, target);
      const Timed b = time_variant(family, "flash_banked", shape, banked_params, target);
      if (n) print_row("naive", *n);
      print_row("flash", f);
      if (c) print_row("cte", *c);
      print_row("flash_banked", b);
      record(target.name, seq, "naive", naive, n);
      record(target.name, seq, "flash", flash, f);
      record(target.name, seq, "cte", cte_params, c);
      record(target.name, seq, "flash_banked", banked_params, b);
      auto cell = [](const std::optional<Timed>& t) {
        char text[64];
        if (!t)
          std::snprintf(text, sizeof text, "not timed");
        else if (!t->result.valid)
          std::snprintf(text, sizeof text, "invalid (%s)", invalid_reason(t->result.rule).c_str());
        else
          std::snprintf(text, sizeof text, "%.2f ms, %.1f%%", t->result.total_time_s * 1e3,
                        summary_number(t->result, "mfu_estimated_percent"));
        return std::string(text);
      };
      auto ratio = [&b](const std::optional<Timed>& t) {
        char text[32] = "";
        if (t && t->result.valid && b.result.valid)
          std::snprintf(text, sizeof text, "%.1fx", t->result.total_time_s / b.result.total_time_s);
        return std::string(text);
      };
      char row[512];
      std::snprintf(row, sizeof row, "| %s | %lldK | %s | %s | %s | %s | %s | %s |\n", target.name.c_str(),
                    (long long)(seq / 1024), cell(n).c_str(), cell(f).c_str(), cell(c).c_str(),
                    cell(b).c_str(), ratio(n).c_str(), ratio(c).c_str());
      table += row;
    }
  }
  std::fprintf(text_out,
               "\n| target | seq | naive | flash | cte | flash_banked | naive / banked | cte / banked |\n"
               "|---|---|---|---|---|---|---|---|\n%s",
               table.c_str());
  const sim::TargetSpec target = sim::load_target(targets.front());
  if (sweep) {
    shape["seq"] = max_seq;
    std::fprintf(text_out, "flash sweep at seq %lld (kv_tile q_tile pipeline_depth unroll_factor)\n",
                 (long long)max_seq);
    const VariantSpec& v = family.variant("flash");  // on the first target
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
  if (!json_path.empty()) {
    const std::string text = rows.dump(2) + "\n";
    if (json_path == "-") {
      std::fputs(text.c_str(), stdout);
    } else if (FILE* out = std::fopen(json_path.c_str(), "w")) {
      std::fputs(text.c_str(), out);
      std::fclose(out);
    } else {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
