#pragma once
// Base for strategies that work on space indices (all built-in ones). It
// keeps the bookkeeping every strategy needs to honour the Strategy contract:
// which indices were proposed or told (never propose twice), and the
// observations so far, converted to indices. Subclasses implement
// propose(k) over unseen indices and may react to results in observed().
#include <unordered_set>

#include "core/rng.hpp"
#include "search/strategy.hpp"

namespace autotune::search {

struct IndexedObservation {
  std::uint64_t index;
  std::optional<double> value;
};

class IndexedStrategy : public Strategy {
 public:
  IndexedStrategy(const SearchSpace& space, std::uint64_t seed, std::string name)
      : space_(space), rng_(Rng(seed).fork(name)), name_(std::move(name)) {}

  std::vector<Configuration> ask(std::size_t k) final;
  void tell(const std::vector<Observation>& observations) final;
  // Proposed configurations not told about become unseen again.
  void release(const std::vector<Configuration>& configurations) final;
  bool done() const override { return seen_.size() >= space_.size(); }
  std::string name() const final { return name_; }

 protected:
  // Up to k indices not yet seen(); fewer (or none) when exhausted.
  virtual std::vector<std::uint64_t> propose(std::size_t k) = 0;
  virtual void observed(const std::vector<IndexedObservation>& batch) {}
  // Proposals handed back by release(): forget them wherever propose() kept them.
  virtual void released(const std::vector<std::uint64_t>& indices) {}

  bool seen(std::uint64_t index) const { return seen_.count(index) != 0; }
  std::size_t seen_count() const { return seen_.size(); }
  // A uniformly random unseen index, or nothing when all are seen. Rejection
  // sampling while the space is mostly unexplored, a scan otherwise.
  std::optional<std::uint64_t> random_unseen();
  const std::vector<IndexedObservation>& history() const { return history_; }

  const SearchSpace& space_;
  Rng rng_;

 private:
  std::string name_;
  std::unordered_set<std::uint64_t> seen_;
  std::vector<IndexedObservation> history_;
  std::unordered_set<std::uint64_t> told_;
};

}  // namespace autotune::search
