#pragma once
// The standalone C++ source `autotune export` writes for one tuned
// configuration: the variant's template instantiated with the trial's
// parameters, declared as a user kernel (kernels/external/user_kernel.hpp), so
// that `autotune profile --kernel-source` and a goal's `kernel_source:` compile
// and measure it exactly like the built-in variant it came from.
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/family.hpp"

namespace autotune::kernels::external {

// What the header comment says about where the configuration came from.
struct ExportProvenance {
  std::string run;     // "run 3 (goal quickstart)"
  std::string trial;   // "trial 17"
  std::string target;  // "trn1"
  // Measured figures: latency_s, cycles, mfu_percent, roofline_fraction, ...
  nlohmann::json metrics = nlohmann::json::object();
  nlohmann::json verification;  // {max_rel_error, mse, cosine, ...} or null
};

// The measured figures, one line each, every line starting with `comment`
// (the exported language's comment marker, or an indent).
std::string measured_figures(const nlohmann::json& metrics, const nlohmann::json& verification,
                             const std::string& comment);

// What the header says of a configuration's verification, given the stored
// verification record (`verification`, null when none ran) and the shape it
// runs at: "verified at rows=250,cols=512" only when it passed there; a
// failed one says so, and a configuration never verified (an invalid or
// failed trial, parameters given to `export --kernel`) is said to be
// unverified, with its verification shape.
std::string verification_note(const nlohmann::json& verification, const std::string& verification_shape);

// "name=value, ..." of every parameter of `variant`, in declaration order;
// UserError when the trial has no value for one.
std::string exported_params_line(const VariantSpec& variant, const ParamValues& params);

// A C identifier for the exported kernel, e.g. "gemm_tiled_run3_trial17".
std::string export_kernel_name(const std::string& family, const std::string& variant,
                               const std::string& suffix);

// The source text. The kernel keeps the variant's full parameter domains and
// constraints, with the trial's values as defaults, so it can be tuned further
// from a goal; its verification shape follows the built-in variant's rule.
// UserError when the variant has no exportable template (header,
// template_name or params_struct missing) or a parameter has no value.
std::string export_source(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                          Dtype dtype, const ParamValues& params, const std::string& kernel_name,
                          const ExportProvenance& provenance);

}  // namespace autotune::kernels::external
