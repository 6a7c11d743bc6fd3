#include "kernels/families/family_support.hpp"

#include <algorithm>

namespace autotune::kernels {

Shape tiled_verification_shape(const Shape& full, const std::vector<AxisTiling>& axes,
                               const std::function<double(const Shape&)>& work, double budget,
                               const Shape& others) {
  Shape shape = full;
  for (const auto& [arg, value] : others)
    if (shape.count(arg) != 0) shape[arg] = std::min(shape[arg], value);

  // Extent of axis `a` at coverage level 2 (two blocks + remainder), 1, 0.
  auto extent = [&](const AxisTiling& a, int level) {
    const std::int64_t remainder = a.tile + a.tile / 2 + 1;
    return std::min(a.block * level + remainder, full.at(a.arg));
  };
  std::vector<int> level(axes.size(), 2);
  for (std::size_t i = 0; i < axes.size(); ++i) shape[axes[i].arg] = extent(axes[i], 2);
  while (work(shape) > budget) {
    int longest = -1;
    for (std::size_t i = 0; i < axes.size(); ++i)
      if (level[i] > 0 && (longest < 0 || shape[axes[i].arg] > shape[axes[longest].arg])) longest = int(i);
    if (longest < 0) break;
    shape[axes[longest].arg] = extent(axes[longest], --level[longest]);
  }
  return shape;
}

Shape ragged_blocks(const Shape& full, const std::vector<std::pair<std::string, std::int64_t>>& blocks) {
  Shape shape = full;
  for (const auto& [arg, block] : blocks) shape[arg] = std::min(block + 65, full.at(arg));
  return shape;
}

}  // namespace autotune::kernels
