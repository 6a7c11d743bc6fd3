#pragma once
// Timing dependencies between instructions, derived from the regions they
// read and write in one address space (SBUF or PSUM by physical address:
// partition x byte; an HBM tensor by element row x column).
//
// Accesses are fed in program order. For each access, `conflicts` names every
// earlier instruction whose access conflicts with it (read-after-write,
// write-after-read, write-after-write on overlapping regions); `record` then
// remembers the access. The space is cut into a grid of buckets; an access is
// recorded in every bucket it overlaps. Records made redundant are pruned,
// which keeps buckets short and loses no ordering: a newer write hides every
// older access inside it (the write depends on them, so it finishes after
// them and any later conflict with them conflicts with it), and a newer read
// on the same in-order compute engine hides older reads it covers.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/program.hpp"

namespace autotune::sim {

struct Region {
  std::int64_t r0, r1;  // rows (partitions)
  std::int64_t c0, c1;  // columns (elements) or bytes
};

class DependencyTracker {
 public:
  DependencyTracker() = default;
  // Buckets are row_block x col_block, both rounded up to powers of two.
  DependencyTracker(std::int64_t rows, std::int64_t cols, std::int64_t row_block, std::int64_t col_block)
      : row_shift_(shift_for(row_block)),
        col_shift_(shift_for(col_block)),
        row_buckets_(((std::max<std::int64_t>(rows, 1) - 1) >> row_shift_) + 1),
        col_buckets_(((std::max<std::int64_t>(cols, 1) - 1) >> col_shift_) + 1),
        buckets_(static_cast<std::size_t>(row_buckets_ * col_buckets_)) {}

  // Calls on_conflict(instruction) for each earlier conflicting access (an
  // instruction may be named more than once).
  template <class F>
  void conflicts(const Region& r, bool write, F&& on_conflict) const {
    for_each_bucket(r, [&](std::size_t b, const Region&) {
      for (const Record& rec : buckets_[b]) {
        if ((write || rec.write) && overlaps(rec.region, r)) on_conflict(rec.instruction);
      }
    });
  }

  void record(const Region& r, bool write, Engine engine, InstructionId instruction) {
    const bool in_order = engine != Engine::dma;
    for_each_bucket(r, [&](std::size_t b, const Region& bucket) {
      auto& list = buckets_[b];
      const Region clip_new = intersect(r, bucket);
      std::size_t kept = 0;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const Record& old = list[i];
        const bool hidden = (write || (!old.write && in_order && old.engine == engine)) &&
                            contains(clip_new, intersect(old.region, bucket));
        if (!hidden) list[kept++] = old;
      }
      list.resize(kept);
      list.push_back(Record{r, instruction, engine, write});
    });
  }

 private:
  struct Record {
    Region region;
    InstructionId instruction;
    Engine engine;
    bool write;
  };

  static bool overlaps(const Region& a, const Region& b) {
    return a.r0 < b.r1 && b.r0 < a.r1 && a.c0 < b.c1 && b.c0 < a.c1;
  }
  static bool contains(const Region& outer, const Region& inner) {
    return outer.r0 <= inner.r0 && inner.r1 <= outer.r1 && outer.c0 <= inner.c0 && inner.c1 <= outer.c1;
  }
  static Region intersect(const Region& a, const Region& b) {
    return Region{std::max(a.r0, b.r0), std::min(a.r1, b.r1), std::max(a.c0, b.c0), std::min(a.c1, b.c1)};
  }

  static int shift_for(std::int64_t block) {
    int shift = 0;
    while ((std::int64_t(1) << shift) < block) ++shift;
    return shift;
  }

  template <class F>
  void for_each_bucket(const Region& r, F&& f) const {
    const std::int64_t rb0 = std::clamp<std::int64_t>(r.r0 >> row_shift_, 0, row_buckets_ - 1);
    const std::int64_t rb1 = std::clamp<std::int64_t>((r.r1 - 1) >> row_shift_, 0, row_buckets_ - 1);
    const std::int64_t cb0 = std::clamp<std::int64_t>(r.c0 >> col_shift_, 0, col_buckets_ - 1);
    const std::int64_t cb1 = std::clamp<std::int64_t>((r.c1 - 1) >> col_shift_, 0, col_buckets_ - 1);
    for (std::int64_t rb = rb0; rb <= rb1; ++rb) {
      for (std::int64_t cb = cb0; cb <= cb1; ++cb) {
        // The last bucket of each axis extends to infinity so that nothing is
        // lost if a region lies outside the declared size.
        const Region bucket{rb << row_shift_, rb == row_buckets_ - 1 ? INT64_MAX : (rb + 1) << row_shift_,
                            cb << col_shift_, cb == col_buckets_ - 1 ? INT64_MAX : (cb + 1) << col_shift_};
        f(static_cast<std::size_t>(rb * col_buckets_ + cb), bucket);
      }
    }
  }

  int row_shift_ = 0, col_shift_ = 0;
  std::int64_t row_buckets_ = 1, col_buckets_ = 1;
  std::vector<std::vector<Record>> buckets_;
};

// Busy intervals of one shared resource (a DMA queue, a shared port), kept
// sorted and merged. Grants go to the earliest gap at or after the request,
// so a transfer that becomes ready early is not held behind one issued
// earlier in program order but ready later.
class ResourceCalendar {
 public:
  // The earliest start >= t at which the resource is free for `duration`.
  double earliest(double t, double duration) const {
    auto it = std::upper_bound(busy_.begin(), busy_.end(), t,
                               [](double value, const Interval& i) { return value < i.end; });
    for (; it != busy_.end(); ++it) {
      if (it->start >= t + duration) break;
      t = std::max(t, it->end);
    }
    return t;
  }
  void reserve(double start, double end) {
    if (end <= start) return;
    // First interval ending at or after `start`: it may touch or overlap.
    auto it = std::lower_bound(busy_.begin(), busy_.end(), start,
                               [](const Interval& i, double value) { return i.end < value; });
    if (it == busy_.end()) {
      busy_.push_back({start, end});
      return;
    }
    if (it->start > end) {
      busy_.insert(it, {start, end});
      return;
    }
    // Merge with every interval touching [start, end].
    auto last = it;
    double merged_start = std::min(start, it->start), merged_end = end;
    while (last != busy_.end() && last->start <= end) {
      merged_end = std::max(merged_end, last->end);
      ++last;
    }
    *it = {merged_start, merged_end};
    busy_.erase(it + 1, last);
  }
  void clear() { busy_.clear(); }

 private:
  struct Interval {
    double start, end;
  };
  std::vector<Interval> busy_;
};

}  // namespace autotune::sim
