#include "kernels/external/export_source.hpp"

#include <cctype>
#include <cstdio>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"

namespace autotune::kernels::external {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string list(const std::vector<std::int64_t>& values) { return "{" + join(values, ", ") + "}"; }

std::string number(double value, const char* format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::string measured_figures(const nlohmann::json& metrics, const nlohmann::json& verification,
                             const std::string& comment) {
  std::string out;
  auto has = [&](const char* key) { return metrics.contains(key) && metrics[key].is_number(); };
  if (has("latency_s"))
    out += comment + "  latency      " + number(metrics["latency_s"].get<double>() * 1e3, "%.6f") + " ms\n";
  if (has("cycles"))
    out += comment + "  cycles       " + std::to_string(metrics["cycles"].get<std::int64_t>()) + "\n";
  if (has("mfu_percent"))
    out += comment + "  MFU          " + number(metrics["mfu_percent"].get<double>(), "%.2f") + " %\n";
  if (has("throughput_flops_per_s"))
    out += comment + "  throughput   " +
           number(metrics["throughput_flops_per_s"].get<double>() / 1e12, "%.3f") + " TFLOP/s\n";
  if (has("roofline_fraction"))
    out += comment + "  roofline     " + number(metrics["roofline_fraction"].get<double>() * 100, "%.1f") +
           " % of the bound\n";
  if (verification.is_object() && verification.contains("max_rel_error") &&
      verification["max_rel_error"].is_number())
    out += comment +
           (verification.value("passed", false) ? "  verified     max rel error "
                                                : "  verification FAILED: max rel error ") +
           number(verification["max_rel_error"].get<double>(), "%.3g") +
           (verification.contains("cosine") && verification["cosine"].is_number()
                ? ", cosine " + number(verification["cosine"].get<double>(), "%.6f")
                : std::string()) +
           "\n";
  return out.empty() ? comment + "  (no measured figures stored)\n" : out;
}

std::string verification_note(const nlohmann::json& verification, const std::string& verification_shape) {
  if (verification.is_object() && verification.contains("passed") && verification["passed"].is_boolean())
    return (verification["passed"].get<bool>() ? "verified at " : "verification FAILED at ") +
           verification_shape;
  return "not verified; its verification shape is " + verification_shape;
}

std::string exported_params_line(const VariantSpec& variant, const ParamValues& params) {
  return join(variant.params, ", ", [&](const ParamSpec& p) {
    if (params.count(p.name) == 0)
      throw UserError("the trial has no value for parameter '" + p.name + "' of variant '" + variant.name +
                      "'");
    return p.name + "=" + std::to_string(params.at(p.name));
  });
}

std::string export_kernel_name(const std::string& family, const std::string& variant,
                               const std::string& suffix) {
  std::string name = family + "_" + variant + (suffix.empty() ? "" : "_" + suffix);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) name = "k_" + name;
  return name;
}

std::string export_source(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                          Dtype dtype, const ParamValues& params, const std::string& kernel_name,
                          const ExportProvenance& provenance) {
  if (variant.header.empty() || variant.template_name.empty() || variant.params_struct.empty() ||
      family.shape_struct.empty())
    throw UserError("variant '" + variant.name + "' of kernel '" + family.name +
                    "' declares no exportable template (header, template name, parameter struct)");
  const std::string params_line = exported_params_line(variant, params);

  std::string s;
  s += "// " + kernel_name + ": kernel '" + family.name + "', variant '" + variant.name +
       "', exported by autotune\n";
  s += "//\n";
  if (!provenance.run.empty())
    s += "//   from         " + provenance.run + (provenance.trial.empty() ? "" : ", " + provenance.trial) +
         "\n";
  s += "//   variant      " + variant.name + ": " + variant.description + "\n";
  s += "//   parameters   " + (params_line.empty() ? std::string("(none)") : params_line) + "\n";
  s += "//   shape        " + shape_text(shape, family) + "\n";
  s += "//   dtype        " + std::string(sim::dtype_name(dtype)) + "\n";
  if (!provenance.target.empty()) s += "//   target       " + provenance.target + "\n";
  s += "// measured:\n" + measured_figures(provenance.metrics, provenance.verification, "//");
  s += "//\n";
  s += "// The tuned instance, as the built-in variant traces it:\n";
  s += "//   " + instantiation_source(family, variant, shape, dtype, params) + "\n";
  s += "//\n";
  s += "// Measure it (compiled into a shared object, run in an isolated worker):\n";
  s += "//   autotune profile --kernel-source THIS_FILE --shape " + shape_text(shape, family) + " --dtype " +
       std::string(sim::dtype_name(dtype)) +
       (provenance.target.empty() ? "" : " --target " + provenance.target) + "\n";
  s += "// or tune it further from a goal with `kernel_source: THIS_FILE` (docs/kernel_sources.md).\n\n";
  s += "#include \"kernels/external/user_kernel.hpp\"\n";
  s += "#include \"kernels/families/family_support.hpp\"\n";
  s += "#include \"" + variant.header + "\"\n\n";
  s += "namespace {\n\n";
  s += "using namespace autotune::kernels;\n\n";
  s += "// The variant's template for the runtime shape, dtype and parameters.\n";
  s += "void trace(Kernel& kernel, const Shape& shape, Dtype dtype, const ParamValues& p) {\n";
  s += "  const " + family.shape_struct + " shape_args{";
  s += join(family.shape_args, ", ",
            [](const std::string& arg) { return "." + arg + " = int_arg(shape, \"" + arg + "\")"; });
  s += "};\n";
  s += "  const " + variant.params_struct + " params{";
  s += join(variant.params, ",\n      ",
            [](const ParamSpec& p) { return "." + p.name + " = int_param(p, \"" + p.name + "\")"; });
  s += "};\n";
  s += "  dispatch_dtype(dtype, [&]<Dtype D>() { " + variant.template_name +
       "<D>(kernel, shape_args, params); });\n";
  s += "}\n\n}  // namespace\n\n";
  s += "AUTOTUNE_USER_KERNEL(" + kernel_name + ") {\n";
  s += "  kernel.family = " + quoted(family.name) + ";\n";
  s += "  kernel.description = " +
       quoted(variant.description + " (tuned: " + (params_line.empty() ? "no parameters" : params_line) +
              ")") +
       ";\n";
  s += "  // Domains of the built-in variant; the defaults are the tuned values.\n";
  s += "  kernel.params = {\n";
  for (const auto& p : variant.params)
    s += "      {" + quoted(p.name) + ", " + quoted(p.description) + ", " + list(p.values) + ", " +
         std::to_string(params.at(p.name)) +
         ", ParamRole::" + (p.role == ParamRole::none ? std::string("none") : role_name(p.role)) + "},\n";
  s += "  };\n";
  s += "  kernel.constraints = {\n";
  for (const auto& c : variant.constraints) s += "      " + quoted(c) + ",\n";
  s += "  };\n";
  s += "  kernel.verification_as_variant = " + quoted(variant.name) + ";\n";
  s += "  kernel.trace = trace;\n";
  s += "}\n";
  return s;
}

}  // namespace autotune::kernels::external
