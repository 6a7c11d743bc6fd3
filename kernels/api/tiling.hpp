#pragma once
// Loops over tiles of an extent, the last one ragged when the tile does not
// divide the extent:
//
//   for (TileSpan m : tiles(M, tile_m))            // [0, tile_m), [tile_m, 2 tile_m), ..., ragged rest
//     for (TileSpan bm : tiles(m, tile_m / 2))     // sub-tiles of one span, absolute positions
//       ... lhsT.slice(k.begin, k.end(), bm.begin, bm.end()) ...
//
// Kernels written with these loops handle any size, so verification can use
// small ragged shapes that exercise the same code as the full shape.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/api/kernel.hpp"

namespace autotune::kernels {

struct TileSpan {
  int index = 0;  // position of the tile in its loop, from 0
  int begin = 0;  // first element (absolute)
  int size = 0;   // elements in this tile (the tile size, or less for the last)
  int end() const { return begin + size; }
  // Position relative to the start of the span the loop walks.
  int offset = 0;
};

class TileRange {
 public:
  TileRange(int begin, int extent, int tile)
      : begin_(begin), extent_(std::max(extent, 0)), tile_(std::max(tile, 1)) {}

  class iterator {
   public:
    iterator(const TileRange* range, int index) : range_(range), index_(index) {}
    TileSpan operator*() const {
      const int offset = index_ * range_->tile_;
      return TileSpan{index_, range_->begin_ + offset, std::min(range_->tile_, range_->extent_ - offset),
                      offset};
    }
    iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return index_ != other.index_; }

   private:
    const TileRange* range_;
    int index_;
  };

  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, count()); }
  int count() const { return (extent_ + tile_ - 1) / tile_; }

 private:
  int begin_, extent_, tile_;
};

// Tiles of [0, extent).
inline TileRange tiles(int extent, int tile) { return TileRange(0, extent, tile); }
// Tiles of the elements of `span` (absolute positions; `offset` relative to span.begin).
inline TileRange tiles(const TileSpan& span, int tile) { return TileRange(span.begin, span.size, tile); }
inline int tile_count(std::int64_t extent, std::int64_t tile) {
  return static_cast<int>((extent + tile - 1) / tile);
}

// Rows mapped to partitions `fold` at a time (Tensor::fold_rows): partition p
// of a group takes rows [begin + p * fold, begin + (p + 1) * fold).
struct FoldedRows {
  int begin = 0;       // first row
  int partitions = 0;  // partitions the group fills
  int fold = 1;        // consecutive rows per partition
  int rows() const { return partitions * fold; }
};

// Groups covering rows [0, extent) in order: blocks of `partitions * fold`
// rows; of a ragged last block, the rows that fill whole folds form one
// group and the rest go one per partition.
inline std::vector<FoldedRows> folded_row_groups(int extent, int partitions, int fold) {
  std::vector<FoldedRows> groups;
  fold = std::max(fold, 1);
  for (TileSpan block : tiles(extent, partitions * fold)) {
    const int whole = block.size / fold;
    if (whole > 0) groups.push_back({block.begin, whole, fold});
    if (block.size % fold != 0) groups.push_back({block.begin + whole * fold, block.size % fold, 1});
  }
  return groups;
}

// Columns `cols` of a group's rows of `t`, folded: what one DMA moves into
// the group's partitions.
inline Tensor folded_block(const Tensor& t, const FoldedRows& g, const TileSpan& cols) {
  return t.slice(g.begin, g.begin + g.rows(), cols.begin, cols.end()).fold_rows(g.fold);
}

// The engine of a vector-class placement knob for the `step`-th tile of a
// loop: 0 the vector engine, 1 GpSimd, 2 the two alternating by step.
inline Engine alternating_vector_engine(int choice, int step) {
  if (choice == 1) return Engine::gpsimd;
  if (choice == 2) return step % 2 == 0 ? Engine::vector : Engine::gpsimd;
  return Engine::vector;
}

}  // namespace autotune::kernels
