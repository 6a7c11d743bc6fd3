// Misuse of the kernel pipeline is one UserError line naming what was wrong
// and what is accepted; the registry is consistent.
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "kernels/evaluate.hpp"
#include "sim/target.hpp"

using namespace autotune;
using namespace autotune::kernels;

namespace {

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("resolve_params fills defaults and rejects unknown names and values outside the domain") {
  const VariantSpec& variant = family_registry().get("gemm").variant("blocked_mnk");
  const ParamValues p = resolve_params(variant, std::map<std::string, std::string>{{"unroll_factor", "2"}});
  CHECK(p.at("unroll_factor") == 2);
  CHECK(p.at("tiles_in_block_m") == 16);
  CHECK(p.at("tiles_in_block_n") == 2);
  CHECK(p.at("tiles_in_block_k") == 8);
  CHECK(p.size() == variant.params.size());

  std::string e = user_error_of([&] {
    resolve_params(variant, std::map<std::string, std::string>{{"tile", "2"}});
  });
  CHECK(contains(e, "unknown parameter 'tile'"));
  CHECK(contains(e, "tiles_in_block_k"));  // lists what is accepted
  CHECK(e.find('\n') == std::string::npos);

  e = user_error_of([&] {
    resolve_params(variant, std::map<std::string, std::string>{{"unroll_factor", "3"}});
  });
  CHECK(contains(e, "value 3 of parameter 'unroll_factor'"));
  CHECK(contains(e, "accepted: 1, 2, 4"));

  e = user_error_of([&] {
    resolve_params(variant, std::map<std::string, std::string>{{"unroll_factor", "two"}});
  });
  CHECK(contains(e, "not an integer"));
  CHECK(contains(e, "accepted: 1, 2, 4"));

  e = user_error_of([&] { resolve_params(variant, ParamValues{{"pipeline_depth", 9}}); });
  CHECK(contains(e, "outside its domain"));
}

TEST_CASE("parse_shape reads whole NAME=VALUE lists, the default for none, and rejects the rest") {
  const FamilySpec& gemm = family_registry().get("gemm");
  Shape s = parse_shape(gemm, "M=4096,N=8192,K=8192");
  CHECK(s.at("M") == 4096);
  CHECK(s.at("K") == 8192);
  s = parse_shape(gemm, " M = 256 ,N=128, K=512 ");
  CHECK(s == Shape{{"M", 256}, {"N", 128}, {"K", 512}});
  CHECK(parse_shape(gemm, "") == gemm.default_shape);
  CHECK(parse_shape(gemm, "  ") == gemm.default_shape);

  // Given in part: never completed from the default; the message names what is missing and what is taken.
  std::string e = user_error_of([&] { parse_shape(gemm, "M=1024,N=1024"); });
  CHECK(contains(e, "missing K"));
  CHECK(contains(e, "the shape arguments of gemm are M, N, K"));
  CHECK(contains(e, "M=4096,N=8192,K=8192"));
  CHECK(contains(user_error_of([&] { parse_shape(gemm, "K=64"); }), "missing M, N;"));
  // Every family alike.
  for (const auto& name : family_registry().names()) {
    CAPTURE(name);
    const FamilySpec& family = family_registry().get(name);
    CHECK(parse_shape(family, shape_text(family.default_shape, family)) == family.default_shape);
    const std::string first = family.shape_args.front();
    const std::string partial = first + "=" + std::to_string(family.default_shape.at(first));
    if (family.shape_args.size() > 1)
      CHECK(
          contains(user_error_of([&] { parse_shape(family, partial); }), "missing " + family.shape_args[1]));
  }

  e = user_error_of([&] { parse_shape(gemm, "M=4096,X=2"); });
  CHECK(contains(e, "unknown shape argument 'X'"));
  CHECK(contains(e, "accepted: M, N, K"));
  e = user_error_of([&] { parse_shape(gemm, "M4096"); });
  CHECK(contains(e, "malformed shape"));
  CHECK(contains(e, "NAME=VALUE"));
  e = user_error_of([&] { parse_shape(gemm, "M=4k"); });
  CHECK(contains(e, "not an integer"));
  e = user_error_of([&] { parse_shape(gemm, "M=1,M=2"); });
  CHECK(contains(e, "given twice"));
  e = user_error_of([&] { parse_shape(gemm, "M=0,N=1,K=1"); });
  CHECK(contains(e, "M must be in"));
  e = user_error_of([&] { parse_shape(gemm, "M=1,"); });
  CHECK(contains(e, "malformed shape"));
}

TEST_CASE("unknown kernels, variants and dtypes are user errors naming what is accepted") {
  std::string e = user_error_of([] { family_registry().get("softmax"); });
  CHECK(contains(e, "unknown kernel 'softmax'"));
  CHECK(contains(e, "gemm"));
  e = user_error_of([] { family_registry().get("gemm").variant("fast"); });
  CHECK(contains(e, "unknown variant 'fast'"));
  CHECK(contains(e, "blocked_mnk"));

  const sim::TargetSpec trn1 = sim::load_target("trn1");
  const FamilySpec& exp = family_registry().get("exp");
  e = user_error_of([&] { evaluate(exp, "naive", exp.default_shape, sim::Dtype::int32, {}, trn1, {}); });
  CHECK(contains(e, "does not take dtype 'int32'"));
  CHECK(contains(e, "fp32"));
}

TEST_CASE("every family is complete and its defaults are in their domains") {
  const auto& registry = family_registry();
  for (const char* name : {"exp", "gemm", "rmsnorm"}) REQUIRE(registry.contains(name));
  for (const auto& [name, family] : registry.entries()) {
    INFO(name);
    CHECK(!family.dtypes.empty());
    CHECK(!family.shape_args.empty());
    CHECK(family.variants.size() >= 2);
    CHECK_NOTHROW(family.variant(family.baseline_variant));
    if (!family.default_variant.empty()) CHECK_NOTHROW(family.variant(family.default_variant));
    CHECK(family.check_shape(family.default_shape).empty());
    for (const auto& d : family.dtypes) CHECK(family.tolerance.count(d) == 1);
    for (const auto& v : family.variants) {
      INFO(v.name);
      CHECK(v.trace);
      CHECK(v.verification_shape);
      CHECK(!v.template_name.empty());
      CHECK(!v.header.empty());
      for (const auto& p : v.params) {
        INFO(p.name);
        CHECK(std::find(p.values.begin(), p.values.end(), p.default_value) != p.values.end());
        CHECK(std::is_sorted(p.values.begin(), p.values.end()));
      }
    }
  }
  // The knobs the issue names exist where they make sense.
  for (const char* variant : {"tiled", "hoisted", "blocked_mn", "blocked_mnk"}) {
    const VariantSpec& v = registry.get("gemm").variant(variant);
    CHECK(v.find_param("unroll_factor") != nullptr);
    CHECK(v.find_param("pipeline_depth") != nullptr);
    CHECK(v.find_param("tile_n") != nullptr);
  }
  CHECK(registry.get("exp").variant("tiled").find_param("tile_size") != nullptr);
  CHECK(registry.get("rmsnorm").variant("fused").find_param("pipeline_depth") != nullptr);
}

TEST_CASE("the blocked_mnk defaults are the tutorial's and export instantiates the template") {
  const FamilySpec& gemm = family_registry().get("gemm");
  const VariantSpec& v = gemm.variant("blocked_mnk");
  const ParamValues p = resolve_params(v, ParamValues{});
  CHECK(p.at("tile_m") * p.at("tiles_in_block_m") == 16 * 128);
  CHECK(p.at("tile_n") * p.at("tiles_in_block_n") == 2 * 512);
  CHECK(p.at("tile_k") * p.at("tiles_in_block_k") == 8 * 128);
  const std::string source = instantiation_source(gemm, v, gemm.default_shape, sim::Dtype::bf16, p);
  CHECK(contains(source, "autotune::kernels::gemm_blocked_mnk<autotune::sim::Dtype::bf16>(kernel, "));
  CHECK(contains(source, "autotune::kernels::GemmShape{.M = 4096, .N = 8192, .K = 8192}"));
  CHECK(contains(source, ".tiles_in_block_m = 16"));
}

TEST_CASE("traced programs carry the kernel's source lines and no trace errors") {
  const sim::TargetSpec trn1 = sim::load_target("trn1");
  for (const char* name : {"exp", "gemm", "rmsnorm"}) {
    const FamilySpec& family = family_registry().get(name);
    for (const auto& v : family.variants) {
      INFO(name, "/", v.name);
      const sim::Program program = trace_program(family, v, family.default_shape, family.dtypes.front(),
                                                 resolve_params(v, ParamValues{}), trn1);
      CHECK(program.size() > 0);
      CHECK(program.trace_errors().empty());
      bool names_family_header = false;
      for (const auto& loc : program.locations())
        names_family_header |= contains(loc.file, v.header.substr(17));
      CHECK(names_family_header);
    }
  }
}
