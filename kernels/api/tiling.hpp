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

}  // namespace autotune::kernels
