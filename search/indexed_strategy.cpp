#include "search/indexed_strategy.hpp"

namespace autotune::search {

std::vector<Configuration> IndexedStrategy::ask(std::size_t k) {
  std::vector<Configuration> out;
  if (k == 0 || done()) return out;
  for (std::uint64_t index : propose(k)) {
    AUTOTUNE_CHECK(index < space_.size(), name_ + " proposed an index outside the space");
    AUTOTUNE_CHECK(seen_.insert(index).second, name_ + " proposed a configuration twice");
    out.push_back(space_.configuration_at(index));
    if (out.size() == k) break;
  }
  return out;
}

void IndexedStrategy::tell(const std::vector<Observation>& observations) {
  std::vector<IndexedObservation> batch;
  for (const auto& observation : observations) {
    const auto index = space_.index_of(observation.configuration);
    if (!index) continue;
    seen_.insert(*index);
    told_.insert(*index);
    batch.push_back({*index, observation.value});
  }
  history_.insert(history_.end(), batch.begin(), batch.end());
  if (!batch.empty()) observed(batch);
}

void IndexedStrategy::release(const std::vector<Configuration>& configurations) {
  std::vector<std::uint64_t> indices;
  for (const auto& configuration : configurations) {
    const auto index = space_.index_of(configuration);
    if (!index || told_.count(*index) || !seen_.erase(*index)) continue;
    indices.push_back(*index);
  }
  if (!indices.empty()) released(indices);
}

std::optional<std::uint64_t> IndexedStrategy::random_unseen() {
  const std::uint64_t size = space_.size();
  if (seen_.size() >= size) return std::nullopt;
  if (seen_.size() < size / 2) {
    for (;;) {
      const std::uint64_t index = space_.random_index(rng_);
      if (!seen(index)) return index;
    }
  }
  // Dense: pick the r-th unseen index.
  std::uint64_t r =
      static_cast<std::uint64_t>(rng_.uniform_int(0, static_cast<std::int64_t>(size - seen_.size() - 1)));
  for (std::uint64_t index = 0; index < size; ++index) {
    if (seen(index)) continue;
    if (r-- == 0) return index;
  }
  return std::nullopt;
}

}  // namespace autotune::search
