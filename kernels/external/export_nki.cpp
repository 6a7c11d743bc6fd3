#include "kernels/external/export_nki.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"

namespace autotune::kernels::external {
namespace {

// kernels/external/nki/*.py by file name, embedded at build time.
const std::map<std::string, std::string>& nki_templates() {
  static const std::map<std::string, std::string> templates = {
#include "nki_templates.inc"
  };
  return templates;
}

// A parameter value whose measured placement NKI 0.6 cannot express: the
// export refuses a trial with it (on `target` only, when one is named).
struct NkiRefusal {
  std::string param;
  std::int64_t value = 0;
  std::string target;  // empty: every target
  std::string reason;  // why NKI 0.6 has no form for it
};

// What an exported variant is made of: its templates in order (helpers
// first, the kernel last), the kernel's arguments and extra constants.
struct NkiRecipe {
  std::vector<std::string> templates;
  std::vector<std::pair<std::string, std::string>> constants;  // name, Python literal
  bool has_legacy = true;                 // the legacy (neuronxcc.nki) templates compute it too
  std::string no_legacy_reason;           // why not, when has_legacy is false
  std::vector<NkiRefusal> refusals = {};  // parameter values NKI 0.6 cannot express
};

// Why a family has no legacy export: its templates were written after the
// neuronxcc.nki namespace was retired.
constexpr const char* kNki06Only = "its templates are written for NKI 0.6 only";

std::optional<NkiRecipe> recipe_for(const std::string& family, const std::string& variant, const Shape& shape,
                                    std::int64_t sbuf_bytes_per_partition) {
  const std::string key = family + "/" + variant;
  if (key == "exp/naive") return NkiRecipe{{"exp_naive"}, {}};
  if (key == "exp/tiled") return NkiRecipe{{"exp_tiled"}, {}};
  if (family == "add" || family == "silu_mul") {
    if (variant != "naive" && variant != "tiled") return std::nullopt;
    return NkiRecipe{{"elementwise_" + variant}, {{"OPERATION", "\"" + family + "\""}}};
  }
  if (key == "rmsnorm/naive" || key == "rmsnorm/fused")
    return NkiRecipe{{"rmsnorm_common", "rmsnorm_" + variant}, {}};
  if (family == "gemm" &&
      (variant == "tiled" || variant == "hoisted" || variant == "blocked_mn" || variant == "blocked_mnk"))
    return NkiRecipe{{"gemm_common", "gemm_" + variant}, {}};
  if (family == "transpose" && (variant == "naive" || variant == "pe" || variant == "dma"))
    return NkiRecipe{{"transpose_" + variant}, {{"BATCH", std::to_string(shape.at("batch"))}}};
  if (key == "rope/naive" || key == "rope/wide") return NkiRecipe{{"rope_" + variant}, {}};
  // attention (causal) and attention_full (no mask) share the templates, which read CAUSAL; the legacy
  // templates are causal only.
  if ((family == "attention" || family == "attention_full") &&
      (variant == "naive" || variant == "flash" || variant == "flash_banked" || variant == "cte")) {
    const bool causal = family == "attention";
    NkiRecipe recipe{{"attention_common", "attention_" + variant}, {{"CAUSAL", causal ? "True" : "False"}}};
    if (variant == "naive")
      recipe.constants.emplace_back("SBUF_BYTES_PER_PARTITION", std::to_string(sbuf_bytes_per_partition));
    recipe.has_legacy = causal;
    recipe.no_legacy_reason = "the legacy attention templates are causal only";
    return recipe;
  }
  // RMSNorm with a matmul (NKIBench), written for the current NKI only.
  if (family == "rmsnorm_matmul" || family == "add_rmsnorm_matmul" || family == "matmul_add_rmsnorm") {
    if (variant != "naive" && variant != "fused") return std::nullopt;
    NkiRecipe recipe{{}, {{"NORM_EPSILON", family == "rmsnorm_matmul" ? "0.0" : "1e-05"}}, false, kNki06Only};
    if (variant == "naive")
      recipe.templates = {"rmsnorm_common", family + "_naive"};
    else if (family == "matmul_add_rmsnorm")
      recipe.templates = {"rmsnorm_common", "norm_matmul_common", "matmul_add_rmsnorm_fused"};
    else
      recipe.templates = {"norm_matmul_common", "norm_matmul_fused", family + "_fused"};
    return recipe;
  }
  if (key == "swiglu/naive" || key == "swiglu/fused" || key == "lora/naive" || key == "lora/fused")
    return NkiRecipe{{"row_transpose_common", family + "_" + variant}, {}, /*has_legacy=*/false, kNki06Only};
  if (key == "silu/naive" || key == "silu/tiled")
    return NkiRecipe{{"silu_" + variant}, {}, /*has_legacy=*/false, kNki06Only};
  // The starting kernel broadcasts b and c as rmsnorm broadcasts gamma.
  if (key == "mamba/naive")
    return NkiRecipe{{"rmsnorm_common", "mamba_naive"}, {}, /*has_legacy=*/false, kNki06Only};
  if (key == "mamba/fused") return NkiRecipe{{"mamba_fused"}, {}, /*has_legacy=*/false, kNki06Only};
  if (key == "adamw/naive") return NkiRecipe{{"adamw_naive"}, {}, /*has_legacy=*/false, kNki06Only};
  if (key == "adamw/fused") {
    NkiRecipe recipe{{"adamw_fused"}, {}, /*has_legacy=*/false, kNki06Only};
    // (d + eps)^-1 is one instruction on the vector engine (tensor_scalar: add, then the unary reciprocal)
    // and, from NeuronCore-v3, on the scalar engine (a reciprocal activation with a constant bias).
    recipe.refusals = {
        {"recip_engine", 2, "",
         "NKI 0.6 runs tensor_scalar on GpSimd for rsqrt only and GpSimd's power (tensor_tensor) adds no "
         "epsilon, so (d + eps)^-1 is not one GpSimd instruction"},
        {"recip_engine", 1, "trn1",
         "NeuronCore-v2's scalar engine takes no bias with a reciprocal activation (NKI's engine-selection "
         "notes) and adds in tensor_scalar only from NeuronCore-v3, so (d + eps)^-1 is not one scalar-engine "
         "instruction there"}};
    return recipe;
  }
  if (family == "bmm" && (variant == "naive" || variant == "paired"))
    return NkiRecipe{{"bmm_common", "bmm_" + variant}, {}, /*has_legacy=*/false, kNki06Only};
  if (family == "bmm_softmax" && (variant == "naive" || variant == "fused"))
    return NkiRecipe{{"bmm_common", "bmm_softmax_" + variant}, {}, /*has_legacy=*/false, kNki06Only};
  return std::nullopt;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string python_dict(const Shape& shape, const FamilySpec& family) {
  std::vector<std::string> items;
  for (const auto& arg : family.shape_args)
    if (shape.count(arg)) items.push_back("\"" + arg + "\": " + std::to_string(shape.at(arg)));
  return "{" + join(items, ", ") + "}";
}

std::string nl_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return "nl.bfloat16";
    case Dtype::fp16:
      return "nl.float16";
    case Dtype::int32:
      return "nl.int32";
    case Dtype::fp32:
      break;
  }
  return "nl.float32";
}

// The numpy dtype of the example's inputs: the tuned dtype (numpy's bfloat16
// comes from ml_dtypes, which the NKI simulator uses too).
std::string numpy_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return "ml_dtypes.bfloat16";
    case Dtype::fp16:
      return "np.float16";
    case Dtype::int32:
      return "np.int32";
    case Dtype::fp32:
      break;
  }
  return "np.float32";
}

// The usage example: random inputs of the tuned shape and dtype, one call on
// the device and, for the current NKI, one under its CPU simulator.
std::string usage_example(const FamilySpec& family, const Shape& shape, Dtype dtype, const std::string& name,
                          NkiVersion version) {
  std::string inputs;
  for (const auto& input : family.inputs) {
    const auto [rows, cols] = input.dims(shape);
    inputs += "    " + input.name + " = np.random.rand(" + std::to_string(rows) + ", " +
              std::to_string(cols) + ").astype(" + numpy_dtype(dtype) + ")\n";
  }
  const auto name_of = [](const auto& operand) { return operand.name; };
  const std::string arguments = join(family.inputs, ", ", name_of);
  const std::string outputs = join(family.outputs, ", ", name_of);
  std::string s = "    import numpy as np\n";
  if (dtype == Dtype::bf16) s += "    import ml_dtypes  # numpy's bfloat16\n";
  if (version == NkiVersion::current) s += "    import nki\n";
  s += "    from " + name + " import " + name + "\n" + inputs;
  s += "    " + outputs + " = " + name + "(" + arguments + ")  # compiled and run on the NeuronCore\n";
  if (version == NkiVersion::current)
    s += "    " + outputs + " = nki.simulate(" + name + ")(" + arguments + ")  # NKI's CPU simulator\n";
  return s;
}

// Variants whose trial transposes by DMA: the current NKI's dma_transpose
// takes 2-byte data only. Besides the two that always do, a variant's
// `dma_transpose` parameter above 0 moves (some of) its transposes to DMAs.
bool transposes_by_dma(const std::string& family, const std::string& variant, const ParamValues& params) {
  if (family == "transpose") return variant == "dma";
  if ((family == "attention" || family == "attention_full") && variant == "cte") return true;
  const auto found = params.find("dma_transpose");
  return found != params.end() && found->second > 0;
}

}  // namespace

NkiVersion parse_nki_version(const std::string& text) {
  if (text == "current" || text == "0.6") return NkiVersion::current;
  if (text == "legacy" || text == "0.1") return NkiVersion::legacy;
  throw UserError(
      "--nki-version '" + text +
      "' is not known; accepted: 0.6 (current, the default: NKI 0.6 in Neuron SDK 2.32, `import nki`) "
      "or legacy (0.1: the neuronxcc.nki namespace of SDKs before 2.27)");
}

std::vector<std::string> nki_exportable_variants() {
  std::vector<std::string> out;
  const auto& registry = family_registry();
  for (const auto& family_name : registry.names()) {
    const FamilySpec& family = registry.get(family_name);
    for (const auto& variant : family.variants)
      if (recipe_for(family_name, variant.name, family.default_shape, 0))
        out.push_back(family_name + "/" + variant.name);
  }
  return out;
}

std::string export_nki(const FamilySpec& family, const VariantSpec& variant, const Shape& shape, Dtype dtype,
                       const ParamValues& params, const std::string& kernel_name,
                       const ExportProvenance& provenance, std::int64_t sbuf_bytes_per_partition,
                       NkiVersion version) {
  const bool legacy = version == NkiVersion::legacy;
  const auto recipe = recipe_for(family.name, variant.name, shape, sbuf_bytes_per_partition);
  if (!recipe) {
    std::vector<std::string> with_template;
    for (const auto& v : nki_exportable_variants())
      if (v.starts_with(family.name + "/")) with_template.push_back(v.substr(family.name.size() + 1));
    const std::string available = join(with_template, ", ");
    throw UserError("variant '" + variant.name + "' of kernel '" + family.name + "' has no NKI template yet" +
                    (available.empty() ? std::string(" (none of this family's variants has one)")
                                       : " (variants with one: " + available + ")") +
                    "; `autotune export` without --nki writes it as C++");
  }
  if (legacy && !recipe->has_legacy)
    throw UserError("kernel '" + family.name + "' has no legacy NKI template (" + recipe->no_legacy_reason +
                    "); export it for NKI 0.6, the default --nki-version");
  if (!legacy && sim::dtype_bytes(dtype) != 2 && transposes_by_dma(family.name, variant.name, params))
    throw UserError("trial of '" + family.name + "/" + variant.name + "' transposes " +
                    std::string(sim::dtype_name(dtype)) +
                    " data by DMA, which NKI's dma_transpose does not take (it transposes 2-byte data only); "
                    "export a bf16 or fp16 trial, or one that transposes on the tensor engine" +
                    (recipe->has_legacy
                         ? std::string(" (--nki-version legacy writes it for the neuronxcc.nki namespace)")
                         : std::string()));
  if (!legacy)
    for (const auto& refusal : recipe->refusals) {
      const auto found = params.find(refusal.param);
      if (found == params.end() || found->second != refusal.value ||
          (!refusal.target.empty() && refusal.target != provenance.target))
        continue;
      throw UserError("trial of '" + family.name + "/" + variant.name + "' has " + refusal.param + " = " +
                      std::to_string(refusal.value) + ", which has no NKI 0.6 form" +
                      (refusal.target.empty() ? std::string() : " on " + refusal.target) + ": " +
                      refusal.reason + "; export a trial with another " + refusal.param);
    }
  const std::string params_line = exported_params_line(variant, params);
  const Shape verification = variant.verification_shape ? variant.verification_shape(shape, params) : shape;
  const std::string dtype_name(sim::dtype_name(dtype));

  std::string s;
  s += "\"\"\"" + kernel_name + ": kernel '" + family.name + "', variant '" + variant.name +
       "', exported by autotune as an NKI kernel\n" +
       (legacy ? std::string("for the neuronxcc.nki namespace (NKI 0.1, Neuron SDK before 2.27).\n\n")
               : std::string("for NKI 0.6 (Neuron SDK 2.32: `import nki`).\n\n"));
  if (!provenance.run.empty())
    s +=
        "  from         " + provenance.run + (provenance.trial.empty() ? "" : ", " + provenance.trial) + "\n";
  s += "  variant      " + variant.name + ": " + variant.description + "\n";
  s += "  parameters   " + (params_line.empty() ? std::string("(none)") : params_line) + "\n";
  s += "  shape        " + shape_text(shape, family) + " (" +
       verification_note(provenance.verification, shape_text(verification, family)) + ")\n";
  s += "  dtype        " + dtype_name + "\n";
  if (!provenance.target.empty()) s += "  target       " + provenance.target + "\n";
  s += "measured in autotune's simulator of the target:\n" +
       measured_figures(provenance.metrics, provenance.verification, "  ");
  s += "\nUsage, on a Trainium host with the Neuron SDK (torch tensors on the XLA device work the same):\n\n";
  s += usage_example(family, shape, dtype, kernel_name, version);
  s +=
      "\nThe loops are Python loops: they unroll while the kernel is traced, so the compiler receives the\n"
      "instruction stream autotune measured, tile by tile, ragged last tiles included. The kernel reads its\n"
      "sizes from its arguments; the tuned parameters below are the constants it was measured with.\n";
  s += "\"\"\"\n";
  s +=
      legacy
          ? "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as "
            "nl\n\n"
          : "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n";
  s +=
      "NKI_VERSION = \"" + std::string(legacy ? "0.1" : "0.6") + "\"  # the NKI this kernel is written for\n";
  s += "SHAPE = " + python_dict(shape, family) + "\n";
  s += "VERIFICATION_SHAPE = " + python_dict(verification, family) + "\n";
  s += "DTYPE = " + nl_dtype(dtype) + "\n\n";
  s += "# Tuned parameters" + (provenance.trial.empty() ? std::string() : ": " + provenance.trial) + "\n";
  for (const auto& p : variant.params)
    s += upper(p.name) + " = " + std::to_string(params.at(p.name)) + "  # " + p.description + "\n";
  for (const auto& [name, literal] : recipe->constants) s += name + " = " + literal + "\n";
  s += "\n";

  const auto& templates = nki_templates();
  std::vector<std::string> parts = {"prelude"};
  parts.insert(parts.end(), recipe->templates.begin(), recipe->templates.end());
  for (const auto& part : parts) {
    const auto found = templates.find(legacy ? "legacy/" + part : part);
    if (found == templates.end())
      throw InternalError("NKI template '" + part + "' was not embedded at build time");
    s += "\n" + found->second;
  }
  // The kernel's name: `tuned_kernel` in the templates.
  return std::regex_replace(s, std::regex("\\btuned_kernel\\b"), kernel_name);
}

}  // namespace autotune::kernels::external
