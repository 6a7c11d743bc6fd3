#pragma once
// Building blocks for the family definitions in kernels/families/*.cpp.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels {

// Every built-in parameter declares its role (ParamRole::none when no finding acts on it).
inline ParamSpec param(std::string name, std::string description, std::vector<std::int64_t> values,
                       std::int64_t default_value, ParamRole role) {
  return ParamSpec{std::move(name), std::move(description), std::move(values), default_value, role};
}

// Calls `f.template operator()<D>()` for the runtime dtype, so that a family
// traces the template instance of its variant for that dtype.
template <class F>
void dispatch_dtype(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::fp32:
      f.template operator()<Dtype::fp32>();
      return;
    case Dtype::bf16:
      f.template operator()<Dtype::bf16>();
      return;
    case Dtype::fp16:
      f.template operator()<Dtype::fp16>();
      return;
    case Dtype::int32:
      break;
  }
  throw InternalError("kernel families do not trace int32 kernels");
}

inline int int_param(const ParamValues& values, const std::string& name) {
  auto it = values.find(name);
  AUTOTUNE_CHECK(it != values.end(), "parameter '" + name + "' missing when tracing");
  return static_cast<int>(it->second);
}
inline int int_arg(const Shape& shape, const std::string& name) {
  auto it = shape.find(name);
  AUTOTUNE_CHECK(it != shape.end(), "shape argument '" + name + "' missing when tracing");
  return static_cast<int>(it->second);
}

// How a variant walks one shape axis: `tile` elements per tile, `block`
// elements per block (a multiple of the tile; equal to it when the variant
// does not block the axis).
struct AxisTiling {
  std::string arg;
  std::int64_t tile = 1;
  std::int64_t block = 1;
};

// The verification shape of a tiled variant. Each listed axis starts at two
// whole blocks plus a ragged remainder (a whole tile and a ragged tile of
// tile/2 + 1), capped at the full extent. While `work(shape)` exceeds
// `budget`, the longest axis steps down: one whole block plus the
// remainder, then a single block of one whole and one ragged tile. Axes not
// listed keep min(full, their value in `others`).
Shape tiled_verification_shape(const Shape& full, const std::vector<AxisTiling>& axes,
                               const std::function<double(const Shape&)>& work, double budget,
                               const Shape& others = {});

// The verification shape of a blocked variant whose blocks must all be
// exercised: each listed axis one whole block and a ragged second one (one
// tile of 64 + 1 elements), capped at the full extent; axes not listed keep
// their full extent.
Shape ragged_blocks(const Shape& full, const std::vector<std::pair<std::string, std::int64_t>>& blocks);

}  // namespace autotune::kernels
