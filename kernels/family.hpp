#pragma once
// A kernel family: one computation (GEMM, exp, a normalisation, attention)
// with several structurally different variants, each a C++ template tuned by
// named integer parameters.
//
// The family declares everything the tools around it need and nothing about
// how to tune it: its shape arguments, its variants and their parameter
// domains and constraints, a host reference computed in double, and its FLOP
// and byte counts for the roofline. The built-in families are listed in
// kernels/families/builtin.cpp and registered on the first use of
// family_registry(); `autotune kernels` lists that registry.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "kernels/api/kernel.hpp"

namespace autotune::kernels {

// Shape arguments by name, e.g. {M: 4096, N: 8192, K: 8192}.
using Shape = std::map<std::string, std::int64_t>;
// Parameter values by name, e.g. {tile_size: 128, pipeline_depth: 2}.
using ParamValues = std::map<std::string, std::int64_t>;

// What a parameter does to the kernel, declared by the family. The Kernel
// Generator acts on roles, never on parameter names or descriptions: "DMA-bound
// with no overlap" raises whatever parameter plays pipeline_depth.
enum class ParamRole {
  none,            // no finding acts on it; held at the best's value by finding-driven ideas
  tile,            // the size of one tile (one instruction's or one transfer's data)
  unroll,          // loop steps or tiles issued together
  block,           // tiles grouped per block (what is kept on chip and reused)
  pipeline_depth,  // rotating buffers: how many steps are in flight
  placement,       // which engine or DMA queue runs part of the work
};

// The role's name as goals, plugins and the decision log write it ("" for none).
constexpr const char* role_name(ParamRole role) {
  switch (role) {
    case ParamRole::none:
      return "";
    case ParamRole::tile:
      return "tile";
    case ParamRole::unroll:
      return "unroll";
    case ParamRole::block:
      return "block";
    case ParamRole::pipeline_depth:
      return "pipeline_depth";
    case ParamRole::placement:
      return "placement";
  }
  return "";
}
// The role named `name` ("" and "none" are ParamRole::none); nullopt when unknown.
std::optional<ParamRole> parse_role(const std::string& name);
// "tile, unroll, block, pipeline_depth, placement, none", for errors.
std::string accepted_roles();

struct ParamSpec {
  std::string name;
  std::string description;
  // The ordered domain. Ranges are expanded: domains stay small (tens of values).
  std::vector<std::int64_t> values;
  std::int64_t default_value = 0;
  ParamRole role = ParamRole::none;
};

struct VariantSpec {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  // Constraints in the search library's expression syntax over the
  // parameters, the shape arguments and the target constants (e.g.
  // "tile_m * pipeline_depth * 2 <= sbuf_bytes_per_partition"). They prune
  // the search space; a configuration that passes them may still be
  // rejected by the simulator (SBUF overflow etc.), which is data.
  std::vector<std::string> constraints;
  // Traces the variant for `shape` and `dtype` with the given parameters
  // (every declared parameter present) into the kernel's program. Declares
  // the HBM inputs then outputs, in the order of FamilySpec::inputs/outputs.
  std::function<void(Kernel&, const Shape&, Dtype, const ParamValues&)> trace;
  // The smaller shape the output is checked on, for the full shape and the
  // parameters: the same code paths as the full shape (at least two tiles or
  // blocks along tiled axes, a ragged last one where the variant supports
  // it), never larger than the full shape along an axis.
  std::function<Shape(const Shape& full, const ParamValues&)> verification_shape;
  // Optional, for a trace that chooses by the target's limits
  // (Kernel::limits()) where the verification shape would choose otherwise
  // than the full shape: the limits to trace the verification shape with,
  // for the full shape, the verification shape, the parameters, the dtype
  // and the target's limits, so that it takes the full shape's path. Never
  // above the target's: the simulator still checks the program against the
  // target. Unset: the target's.
  std::function<KernelLimits(const Shape& full, const Shape& verification, const ParamValues&, Dtype,
                             const KernelLimits& target)>
      verification_limits;
  // For `autotune export`: the header that defines the variant's template, the
  // template's qualified name and its parameter struct, whose fields are the
  // parameters in declaration order (see instantiation_source()).
  std::string header;
  std::string template_name;
  std::string params_struct;

  const ParamSpec* find_param(const std::string& name) const;
};

struct TensorSpec {
  std::string name;
  // [rows, cols] of the tensor for a shape.
  std::function<std::pair<std::int64_t, std::int64_t>(const Shape&)> dims;
  // Inputs are drawn uniformly from [low, high] (never all zeros).
  double low = -1.0, high = 1.0;
};

// Host-side tensors in row-major order, as doubles.
using HostTensors = std::vector<std::vector<double>>;

struct FamilySpec {
  std::string name;
  std::string description;
  std::vector<std::string> shape_args;  // in the order the CLI prints them
  Shape default_shape;                  // what `run` tunes when a goal names none
  // C++ struct holding the shape arguments in shape_args order (for export).
  std::string shape_struct;
  std::vector<Dtype> dtypes;  // accepted; the first is the default
  std::vector<TensorSpec> inputs, outputs;
  std::vector<VariantSpec> variants;
  std::string baseline_variant;  // the naive starting point of a tuning run
  // What a model runs where nothing was tuned for the operator's shape
  // (model/forward.hpp): the variant an engineer would write first, with its
  // default parameters. Empty: the baseline.
  std::string default_variant;
  // A shape is invalid (UserError-worthy) if this returns a reason.
  std::function<std::string(const Shape&)> check_shape;
  // The reference: outputs computed in double from the inputs.
  std::function<HostTensors(const Shape&, const HostTensors& inputs)> reference;
  // Work and traffic for the roofline (MACs count as 2 FLOPs; bytes are the
  // compulsory HBM traffic: inputs read once, outputs written once).
  std::function<double(const Shape&)> flops;
  std::function<double(const Shape&, Dtype)> hbm_bytes;
  // Whether the FLOPs run on the tensor engine (matmul-class) or on the
  // vector/scalar engines; picks the peak used by the roofline.
  bool tensor_engine_bound = false;
  // Tolerance of the output check per dtype: the largest accepted relative
  // error |a - r| / max(|r|, rms(reference)) (the RMS floor keeps outputs
  // near zero from dominating; see kernels/evaluate.hpp).
  std::map<Dtype, double> tolerance;
  // When above 0, outputs must also have at least this cosine similarity
  // with the reference (the whole-output check of the NKI attention tests).
  double min_cosine_similarity = 0;

  const VariantSpec& variant(const std::string& name) const;  // UserError listing accepted names
  bool accepts(Dtype dtype) const;
};

// The C++ statement that traces `variant` with these arguments, e.g.
//   autotune::kernels::gemm_tiled<autotune::sim::Dtype::bf16>(kernel,
//       autotune::kernels::GemmShape{.M = 4096, ...}, autotune::kernels::GemmTiledParams{.tile_m = 128,
//       ...});
// (what `autotune export` writes into a standalone source).
std::string instantiation_source(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                                 Dtype dtype, const ParamValues& params);

// All known families. Each built-in family registers itself from its own file
// in kernels/families/ with a FamilyRegistration; adding a family is adding
// that file (docs/kernels.md).
Registry<FamilySpec>& family_registry();

struct FamilyRegistration {
  explicit FamilyRegistration(FamilySpec family) {
    std::string name = family.name;
    family_registry().add(name, std::move(family));
  }
};

}  // namespace autotune::kernels
