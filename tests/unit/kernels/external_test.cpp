// Kernel sources: the exported text, and compilation failures as data (a real
// compiler run). Loading and evaluating in the worker is covered end to end by
// tests/e2e/test_kernel_sources.py (it needs the autotune executable).
#include <doctest/doctest.h>

#include "kernels/evaluate.hpp"
#include "kernels/external/export_nki.hpp"
#include "kernels/external/export_source.hpp"
#include "kernels/external/kernel_source.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::kernels;

TEST_CASE("export_source instantiates the variant's template with the trial's parameters as defaults") {
  const FamilySpec& family = family_registry().get("gemm");
  const VariantSpec& variant = family.variant("tiled");
  ParamValues params = resolve_params(variant, ParamValues{{"tile_n", 256}, {"pipeline_depth", 3}});
  external::ExportProvenance provenance;
  provenance.run = "run 7 (goal g)";
  provenance.metrics = {{"latency_s", 2.5e-5}, {"cycles", 35000}, {"mfu_percent", 5.5}};
  const Shape shape{{"M", 256}, {"N", 512}, {"K", 512}};
  const std::string text =
      external::export_source(family, variant, shape, Dtype::bf16, params,
                              external::export_kernel_name("gemm", "tiled", "run7"), provenance);
  CHECK(text.find("AUTOTUNE_USER_KERNEL(gemm_tiled_run7)") != std::string::npos);
  CHECK(text.find("#include \"kernels/families/gemm.hpp\"") != std::string::npos);
  CHECK(text.find("autotune::kernels::gemm_tiled<D>") != std::string::npos);
  CHECK(text.find("{64, 128, 256, 512}, 256, ParamRole::tile}") !=
        std::string::npos);  // domain kept, tuned value as default, role kept
  CHECK(text.find("{1, 2, 3, 4, 6, 8}, 3, ParamRole::pipeline_depth}") != std::string::npos);
  CHECK(text.find("cycles       35000") != std::string::npos);
  CHECK(text.find("shape        M=256,N=512,K=512") != std::string::npos);
  CHECK(text.find("kernel.verification_as_variant = \"tiled\"") != std::string::npos);
}

TEST_CASE("an exported kernel's header claims verification only for a trial that passed it") {
  const FamilySpec& family = family_registry().get("exp");
  const VariantSpec& variant = family.variant("tiled");
  const ParamValues params = resolve_params(variant, ParamValues{});
  const Shape shape{{"rows", 250}, {"cols", 512}};
  auto header = [&](const nlohmann::json& verification) {
    external::ExportProvenance provenance;
    provenance.run = "run 3 (goal g)";
    provenance.trial = "trial 4";
    provenance.verification = verification;
    const std::string nki =
        external::export_nki(family, variant, shape, Dtype::fp32, params, "exp_tiled_t4", provenance, 196608);
    return nki.substr(0, nki.find("Usage"));
  };
  CHECK(header({{"passed", true}, {"max_rel_error", 1e-7}}).find("(verified at rows=") != std::string::npos);
  // An invalid trial never ran its verification: no claim, its verification shape all the same.
  const std::string invalid = header(nullptr);
  CHECK(invalid.find("verified at") == std::string::npos);
  CHECK(invalid.find("(not verified; its verification shape is rows=") != std::string::npos);
  // A wrong answer was checked and failed: said as such, in the figures too.
  const std::string wrong = header({{"passed", false}, {"max_rel_error", 0.5}});
  CHECK(wrong.find("(verification FAILED at rows=") != std::string::npos);
  CHECK(wrong.find("verification FAILED: max rel error 0.5") != std::string::npos);
  CHECK(wrong.find("verified ") == std::string::npos);
}

TEST_CASE("export_kernel_name is a C identifier") {
  CHECK(external::export_kernel_name("gemm", "blocked-mn", "run1 trial2") == "gemm_blocked_mn_run1_trial2");
  CHECK(external::export_kernel_name("9x", "v", "") == "k_9x_v");
}

TEST_CASE("a compile error is a result with the compiler's message, never an exception") {
  testing::TempDir dir;
  external::CompileOptions options;
  options.cache_dir = dir.path() / "cache";
  const auto result = external::compile_kernel_source(
      "#include \"kernels/external/user_kernel.hpp\"\nAUTOTUNE_USER_KERNEL(k) { no_such_function(); }\n",
      options);
  CHECK_FALSE(result.ok);
  CHECK(result.error.find("compilation failed") != std::string::npos);
  CHECK(result.compiler_output.find("no_such_function") != std::string::npos);
  CHECK(result.so_path.empty());
}

TEST_CASE("a missing compiler is a result too") {
  testing::TempDir dir;
  external::CompileOptions options;
  options.cache_dir = dir.path() / "cache";
  options.compiler = "no-such-compiler-xyz";
  const auto result = external::compile_kernel_source("int x;\n", options);
  CHECK_FALSE(result.ok);
  CHECK(result.error.find("no C++ compiler found") != std::string::npos);
}

TEST_CASE("KernelDescriptor survives its JSON form") {
  external::KernelDescriptor d;
  d.name = "k";
  d.family = "exp";
  d.params = {ParamSpec{"tile", "columns", {1, 2}, 2, ParamRole::tile}};
  d.shape_args = {"rows", "cols"};
  d.default_shape = {{"rows", 1}, {"cols", 2}};
  d.dtypes = {"fp32"};
  const auto back = external::KernelDescriptor::from_json(d.to_json());
  CHECK(back.name == "k");
  CHECK(back.params.at(0).values == std::vector<std::int64_t>{1, 2});
  CHECK(back.default_shape == d.default_shape);
}

TEST_CASE("declared_kernel_name reads the AUTOTUNE_USER_KERNEL argument, not a definition or a comment") {
  CHECK(external::declared_kernel_name("#include <x>\nAUTOTUNE_USER_KERNEL( my_exp ) {\n}\n") == "my_exp");
  CHECK(external::declared_kernel_name("#define AUTOTUNE_USER_KERNEL(kernel_name) x\n"
                                       "// AUTOTUNE_USER_KERNEL(in_a_comment)\n"
                                       "AUTOTUNE_USER_KERNEL(real) {}\n") == "real");
  CHECK(external::declared_kernel_name("int main() {}\n").empty());
}

TEST_CASE("a source that does not compile keeps its declared name and reports the compiler's message") {
  testing::TempDir dir;
  external::CompileOptions options;
  options.cache_dir = dir.path() / "cache";
  const auto kernel = external::compile_and_describe(
      "#include \"kernels/external/user_kernel.hpp\"\nAUTOTUNE_USER_KERNEL(broken_one) { no_such_function(); "
      "}\n",
      options);
  CHECK_FALSE(kernel.ok);
  CHECK_FALSE(kernel.compiled);
  CHECK_FALSE(kernel.timed_out);
  CHECK(kernel.kernel_name == "broken_one");
  const std::string report = external::failure_report(kernel);
  CHECK(report.starts_with(kernel.error + "\n"));
  CHECK(report.find("no_such_function") != std::string::npos);
}

TEST_CASE("failure_report keeps the error line and the tail of a long compiler message") {
  external::SourceKernel kernel;
  kernel.error = "compilation failed: k.cc:1:1: error: first";
  CHECK(external::failure_report(kernel) == kernel.error);
  for (int i = 0; i < 200; ++i) kernel.compiler_output += "k.cc:" + std::to_string(i) + ":1: note: line\n";
  const std::string report = external::failure_report(kernel, 300);
  CHECK(report.starts_with(kernel.error + "\n...\nk.cc:"));
  CHECK(report.size() <= kernel.error.size() + 5 + 300);
  CHECK(report.ends_with("k.cc:199:1: note: line"));
}
