#pragma once
// Declaring a kernel in a source file of your own (compiled by autotune into a
// shared object, loaded only in an isolated worker process; see
// docs/kernel_sources.md).
//
//   #include "kernels/external/user_kernel.hpp"
//   #include "kernels/families/exp.hpp"          // or your own kernel code
//
//   AUTOTUNE_USER_KERNEL(my_exp) {
//     kernel.family = "exp";     // match exp's inputs, outputs, reference, FLOPs, tolerance
//     kernel.description = "exp in column tiles";
//     kernel.params = {{"tile_size", "columns per tile", {128, 256, 512}, 512}};
//     kernel.trace = [](autotune::kernels::Kernel& k, const autotune::kernels::Shape& shape,
//                       autotune::kernels::Dtype dtype, const autotune::kernels::ParamValues& p) {
//       ... k.input(...), k.sbuf_pool(...), k.dma_copy(...), k.activation(...) ...
//     };
//   }
//
// The body fills `kernel` (a UserKernel whose `name` is already set to the
// macro's argument). The macro exports one `extern "C"` entry point,
// autotune_user_kernel_v1(), returning the descriptor; a source declares
// exactly one kernel.
//
// Verification is not optional: a kernel either names a built-in `family`
// (whose reference, inputs, outputs, FLOPs, bytes, shape arguments, dtypes and
// tolerances it inherits; `reference` may still override the reference), or
// describes its computation itself in `own` with a `reference`. A kernel with
// neither is rejected before anything runs.
//
// The descriptor crosses the shared-object boundary as C++ objects: the
// worker and the kernel are built with the same compiler and standard library
// against the same headers (autotune compiles the source itself), and the
// ABI version and the descriptor's size are checked on load.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels::external {

// Bumped whenever UserKernel or the types it holds change layout.
inline constexpr int kUserKernelAbiVersion = 2;

struct UserKernel {
  int abi_version = kUserKernelAbiVersion;
  std::size_t descriptor_size = sizeof(UserKernel);

  // Identifier-like name; the variant name in runs and trials.
  std::string name;
  std::string description;

  // A built-in family this kernel computes (`autotune kernels` lists them).
  // Empty when `own` describes the computation.
  std::string family;

  // Tunable integer parameters: name, description, ordered domain, default,
  // role (what the Kernel Generator may do with it; ParamRole::none when left out).
  // The trace receives every one of them (defaults filled in).
  std::vector<ParamSpec> params;
  // Constraints over parameters, shape arguments and target constants, in the
  // search library's expression syntax (as VariantSpec::constraints).
  std::vector<std::string> constraints;

  // Traces the kernel for a shape, dtype and parameters: declares the HBM
  // inputs then outputs (in the order of the family's / own's inputs and
  // outputs), allocates tiles and issues instructions (kernels/api/kernel.hpp).
  std::function<void(Kernel&, const Shape&, Dtype, const ParamValues&)> trace;

  // The smaller shape the output is checked on (see
  // VariantSpec::verification_shape). Alternatives, first set wins:
  //  - verification_shape: a function of the full shape and the parameters;
  //  - verification_as_variant: the rule of that built-in variant of `family`
  //    (its parameters must be named like this kernel's);
  //  - neither: the full shape (exact, but slow for large shapes).
  std::function<Shape(const Shape& full, const ParamValues&)> verification_shape;
  std::string verification_as_variant;

  // Overrides the family's reference when set; required when `family` is empty.
  std::function<HostTensors(const Shape&, const HostTensors& inputs)> reference;

  // Without a family: the computation's description. Used fields: shape_args,
  // default_shape, dtypes, inputs, outputs, check_shape (optional), flops and
  // hbm_bytes (optional: no roofline check without them), tensor_engine_bound,
  // tolerance. Its name, variants and reference are ignored (the reference is
  // `reference` above).
  FamilySpec own;
};

// What a kernel source exports: `extern "C" const UserKernel* autotune_user_kernel_v1()`.
using UserKernelEntry = const UserKernel* (*)();
inline constexpr const char* kUserKernelEntrySymbol = "autotune_user_kernel_v1";

}  // namespace autotune::kernels::external

#define AUTOTUNE_USER_KERNEL(kernel_name)                                                            \
  static void autotune_user_kernel_define_(::autotune::kernels::external::UserKernel& kernel);       \
  extern "C" __attribute__((visibility("default"))) const ::autotune::kernels::external::UserKernel* \
  autotune_user_kernel_v1() {                                                                        \
    static const ::autotune::kernels::external::UserKernel descriptor = [] {                         \
      ::autotune::kernels::external::UserKernel k;                                                   \
      k.name = #kernel_name;                                                                         \
      autotune_user_kernel_define_(k);                                                               \
      return k;                                                                                      \
    }();                                                                                             \
    return &descriptor;                                                                              \
  }                                                                                                  \
  static void autotune_user_kernel_define_(::autotune::kernels::external::UserKernel& kernel)
