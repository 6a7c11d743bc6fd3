#include "search/search_space.hpp"

#include <algorithm>
#include <numeric>
#include <ranges>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune::search {

namespace {

// A group's enumerated tuples are kept in memory; beyond this the space is
// too large to index this way (and far beyond any measurement budget).
constexpr std::uint64_t kMaxGroupEntries = 50'000'000;
// Combinations the enumeration of a group may visit (pruned by the
// constraints) before it gives up: a few seconds of work.
constexpr std::uint64_t kMaxGroupVisits = 50'000'000;

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "'" : ", '") + item + "'";
  return out;
}

}  // namespace

SearchSpace::SearchSpace(std::vector<ParameterSpec> parameters, const std::vector<std::string>& constraints,
                         const std::map<std::string, double>& constants)
    : parameters_(std::move(parameters)) {
  if (parameters_.empty()) throw UserError("search space has no parameters");
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (parameters_[i].name() == parameters_[j].name())
        throw UserError("search space: parameter '" + parameters_[i].name() + "' declared twice");

  constraints_ = parse_constraints(parameters_, constraints, constants);
  build_groups(constraints);
}

std::vector<Expression> SearchSpace::parse_constraints(const std::vector<ParameterSpec>& parameters,
                                                       const std::vector<std::string>& constraints,
                                                       const std::map<std::string, double>& constants) {
  std::vector<std::vector<std::string>> categories(parameters.size());
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].is_categorical())
      for (const auto& v : parameters[i].values()) categories[i].push_back(std::get<std::string>(v));
  const SymbolResolver resolve = [&](std::string_view name) -> std::optional<Symbol> {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i].name() == name) {
        Symbol symbol;
        symbol.parameter_slot = i;
        if (parameters[i].is_categorical()) symbol.categories = &categories[i];
        return symbol;
      }
    }
    const auto it = constants.find(std::string(name));
    if (it == constants.end()) return std::nullopt;
    Symbol symbol;
    symbol.constant = it->second;
    return symbol;
  };
  // Categories are only needed while parsing (string literals become positions).
  std::vector<Expression> out;
  for (const auto& text : constraints) out.push_back(Expression::parse(text, resolve));
  return out;
}

std::vector<Positions> SearchSpace::satisfying(const std::vector<ParameterSpec>& parameters,
                                               std::vector<Positions> allowed,
                                               const std::vector<std::string>& constraints,
                                               const std::map<std::string, double>& constants) {
  const auto expressions = parse_constraints(parameters, constraints, constants);
  std::vector<double> values(parameters.size());
  std::erase_if(allowed, [&](const Positions& at) {
    for (std::size_t p = 0; p < at.size(); ++p) values[p] = parameters[p].expression_value(at[p]);
    return !std::all_of(expressions.begin(), expressions.end(),
                        [&](const auto& e) { return e.holds(values); });
  });
  return allowed;
}

SearchSpace SearchSpace::from_allowed(std::vector<ParameterSpec> parameters, std::vector<Positions> allowed) {
  if (allowed.empty()) throw UserError("recorded search space has no configuration");
  SearchSpace space;
  space.parameters_ = std::move(parameters);
  const std::size_t width = space.parameters_.size();
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  Group group;
  group.parameters.resize(width);
  std::iota(group.parameters.begin(), group.parameters.end(), 0);
  for (const auto& positions : allowed) {
    AUTOTUNE_CHECK(positions.size() == width, "allowed configuration of the wrong width");
    for (std::size_t p = 0; p < width; ++p)
      AUTOTUNE_CHECK(positions[p] < space.parameters_[p].size(), "allowed position out of the domain");
    group.tuples.insert(group.tuples.end(), positions.begin(), positions.end());
  }
  group.count = allowed.size();
  space.groups_.push_back(std::move(group));
  space.group_of_parameter_.assign(width, 0);
  space.finish_layout();
  return space;
}

void SearchSpace::build_groups(const std::vector<std::string>& constraint_texts) {
  const std::size_t n = parameters_.size();
  std::vector<std::size_t> root(n);
  std::iota(root.begin(), root.end(), 0);
  const auto find = [&](std::size_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    const auto& slots = constraints_[c].parameter_slots();
    if (slots.empty()) {
      // A constraint over constants only holds for every configuration or none.
      if (!constraints_[c].holds({}))
        throw UserError("infeasible search space: constraint '" + constraints_[c].text() +
                        "' is false whatever the parameters");
      continue;
    }
    for (std::size_t s : slots) root[find(s)] = find(slots.front());
  }
  std::map<std::size_t, std::size_t> group_by_root;
  group_of_parameter_.assign(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    auto [it, added] = group_by_root.emplace(find(p), groups_.size());
    if (added) groups_.emplace_back();
    groups_[it->second].parameters.push_back(p);
    group_of_parameter_[p] = it->second;
  }
  std::vector<std::vector<std::size_t>> constraints_of_group(groups_.size());
  for (std::size_t c = 0; c < constraints_.size(); ++c)
    if (!constraints_[c].parameter_slots().empty())
      constraints_of_group[group_of_parameter_[constraints_[c].parameter_slots().front()]].push_back(c);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    if (constraints_of_group[g].empty()) {
      AUTOTUNE_CHECK(group.parameters.size() == 1, "unconstrained group with several parameters");
      group.count = parameters_[group.parameters.front()].size();  // tuples left empty: rank == position
    } else {
      enumerate_group(group, constraints_of_group[g]);
    }
  }
  finish_layout();
}

void SearchSpace::enumerate_group(Group& group, const std::vector<std::size_t>& constraint_ids) {
  const std::size_t width = group.parameters.size();
  const auto group_names = [&] {
    std::string names;
    for (std::size_t p : group.parameters) names += (names.empty() ? "" : ", ") + parameters_[p].name();
    return names;
  };
  // depth_of[p]: at which depth parameter p is bound.
  std::map<std::size_t, std::size_t> depth_of;
  for (std::size_t d = 0; d < width; ++d) depth_of[group.parameters[d]] = d;
  // At each depth: constraints to check exactly (all parameters bound) and
  // constraints to check over intervals (some still free).
  std::vector<std::vector<std::size_t>> exact(width), partial(width);
  for (std::size_t c : constraint_ids) {
    std::size_t last = 0;
    for (std::size_t s : constraints_[c].parameter_slots()) last = std::max(last, depth_of[s]);
    for (std::size_t s : constraints_[c].parameter_slots())
      if (depth_of[s] < last) partial[depth_of[s]].push_back(c);
    exact[last].push_back(c);
  }
  for (auto& list : partial) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }

  std::vector<Interval> intervals(parameters_.size());
  std::vector<double> values(parameters_.size(), 0.0);
  for (std::size_t p : group.parameters) {
    const auto& spec = parameters_[p];
    double lo = spec.expression_value(0), hi = lo;
    for (std::uint32_t i = 0; i < spec.size(); ++i) {
      lo = std::min(lo, spec.expression_value(i));
      hi = std::max(hi, spec.expression_value(i));
    }
    intervals[p] = {lo, hi};
  }
  std::vector<Interval> free_intervals = intervals;
  Positions current(width, 0);

  std::uint64_t visited = 0;
  const auto descend = [&](auto&& self, std::size_t depth) -> void {
    const std::size_t p = group.parameters[depth];
    const auto& spec = parameters_[p];
    for (std::uint32_t i = 0; i < spec.size(); ++i) {
      if (++visited > kMaxGroupVisits)
        throw UserError("search space too large to index: enumerating the parameters tied by constraints (" +
                        group_names() + ") visits more than " + std::to_string(kMaxGroupVisits) +
                        " combinations; narrow their domains");
      const double v = spec.expression_value(i);
      values[p] = v;
      intervals[p] = Interval::point(v);
      bool ok = true;
      for (std::size_t c : exact[depth])
        if (!constraints_[c].holds(values)) {
          ok = false;
          break;
        }
      if (ok)
        for (std::size_t c : partial[depth])
          if (constraints_[c].surely_false(intervals)) {
            ok = false;
            break;
          }
      if (!ok) continue;
      current[depth] = i;
      if (depth + 1 == width) {
        group.tuples.insert(group.tuples.end(), current.begin(), current.end());
        if (group.tuples.size() > kMaxGroupEntries)
          throw UserError("search space too large to index: parameters tied by constraints have more than " +
                          std::to_string(kMaxGroupEntries / width) + " valid combinations");
      } else {
        self(self, depth + 1);
      }
    }
    intervals[p] = free_intervals[p];
  };
  descend(descend, 0);
  group.count = group.tuples.size() / width;
  if (group.count == 0) {
    std::vector<std::string> texts;
    for (std::size_t c : constraint_ids) texts.push_back(constraints_[c].text());
    throw UserError("infeasible search space: no configuration satisfies the constraints " +
                    quoted_list(texts));
  }
}

void SearchSpace::finish_layout() {
  // The last group varies fastest, so the index order is lexicographic in the
  // groups' parameter order.
  unsigned __int128 total = 1;
  for (std::size_t g = groups_.size(); g-- > 0;) {
    groups_[g].stride = static_cast<std::uint64_t>(total);
    total *= groups_[g].count;
    if (total > std::numeric_limits<std::uint64_t>::max() / 2)
      throw UserError("search space too large: more than 2^63 valid configurations");
  }
  size_ = static_cast<std::uint64_t>(total);
  encoded_offset_.assign(parameters_.size(), -1);
  encoded_dimension_ = 0;
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    const auto& spec = parameters_[p];
    if (spec.size() <= 1) continue;
    encoded_offset_[p] = encoded_dimension_;
    encoded_dimension_ += (spec.is_categorical() && spec.size() > 2) ? static_cast<int>(spec.size()) : 1;
  }
}

std::optional<std::size_t> SearchSpace::parameter_index(const std::string& name) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].name() == name) return i;
  return std::nullopt;
}

double SearchSpace::cartesian_size() const {
  double total = 1;
  for (const auto& p : parameters_) total *= static_cast<double>(p.size());
  return total;
}

Positions SearchSpace::positions_at(std::uint64_t index) const {
  AUTOTUNE_CHECK(index < size_, "configuration index " + std::to_string(index) + " out of range");
  Positions out(parameters_.size());
  for (const Group& group : groups_) {
    const std::uint64_t rank = (index / group.stride) % group.count;
    if (group.tuples.empty()) {
      out[group.parameters.front()] = static_cast<std::uint32_t>(rank);
    } else {
      const std::uint32_t* tuple = group.tuples.data() + rank * group.parameters.size();
      for (std::size_t k = 0; k < group.parameters.size(); ++k) out[group.parameters[k]] = tuple[k];
    }
  }
  return out;
}

std::optional<std::uint64_t> SearchSpace::rank_in_group(const Group& group,
                                                        const std::uint32_t* positions) const {
  if (group.tuples.empty()) return positions[group.parameters.front()];
  const std::size_t width = group.parameters.size();
  std::uint64_t lo = 0, hi = group.count;
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    const std::uint32_t* tuple = group.tuples.data() + mid * width;
    int order = 0;
    for (std::size_t k = 0; k < width && order == 0; ++k) {
      const std::uint32_t want = positions[group.parameters[k]];
      if (tuple[k] < want)
        order = -1;
      else if (tuple[k] > want)
        order = 1;
    }
    if (order == 0) return mid;
    if (order < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> SearchSpace::index_of_positions(const Positions& positions) const {
  if (positions.size() != parameters_.size()) return std::nullopt;
  for (std::size_t p = 0; p < positions.size(); ++p)
    if (positions[p] >= parameters_[p].size()) return std::nullopt;
  std::uint64_t index = 0;
  for (const Group& group : groups_) {
    const auto rank = rank_in_group(group, positions.data());
    if (!rank) return std::nullopt;
    index += *rank * group.stride;
  }
  return index;
}

Configuration SearchSpace::configuration_of(const Positions& positions) const {
  Configuration out;
  out.reserve(positions.size());
  for (std::size_t p = 0; p < positions.size(); ++p) out.push_back(parameters_[p].values()[positions[p]]);
  return out;
}

std::optional<Positions> SearchSpace::positions_of(const Configuration& configuration) const {
  if (configuration.size() != parameters_.size()) return std::nullopt;
  Positions out(configuration.size());
  for (std::size_t p = 0; p < configuration.size(); ++p) {
    const auto position = parameters_[p].position(configuration[p]);
    if (!position) return std::nullopt;
    out[p] = *position;
  }
  return out;
}

Configuration SearchSpace::configuration_at(std::uint64_t index) const {
  return configuration_of(positions_at(index));
}

std::optional<std::uint64_t> SearchSpace::index_of(const Configuration& configuration) const {
  const auto positions = positions_of(configuration);
  if (!positions) return std::nullopt;
  return index_of_positions(*positions);
}

std::uint64_t SearchSpace::random_index(Rng& rng) const {
  return static_cast<std::uint64_t>(rng.uniform_int(0, static_cast<std::int64_t>(size_ - 1)));
}

std::vector<std::uint64_t> SearchSpace::neighbour_indices(std::uint64_t index) const {
  const Positions start = positions_at(index);
  Positions probe = start;
  std::vector<std::uint64_t> out;
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    const auto n = static_cast<std::int64_t>(parameters_[p].size());
    if (parameters_[p].is_categorical()) {
      for (std::int64_t v = 0; v < n; ++v) {
        if (v == start[p]) continue;
        probe[p] = static_cast<std::uint32_t>(v);
        if (const auto i = index_of_positions(probe)) out.push_back(*i);
      }
    } else {
      for (const std::int64_t direction : {-1, 1}) {
        for (std::int64_t v = static_cast<std::int64_t>(start[p]) + direction; v >= 0 && v < n;
             v += direction) {
          probe[p] = static_cast<std::uint32_t>(v);
          if (const auto i = index_of_positions(probe)) {
            out.push_back(*i);
            break;
          }
        }
      }
    }
    probe[p] = start[p];
  }
  return out;
}

std::vector<Configuration> SearchSpace::neighbours(const Configuration& configuration) const {
  const auto index = index_of(configuration);
  if (!index)
    throw UserError("neighbours of a configuration outside the space: " + to_string(*this, configuration));
  std::vector<Configuration> out;
  for (std::uint64_t i : neighbour_indices(*index)) out.push_back(configuration_at(i));
  return out;
}

void SearchSpace::encode_index(std::uint64_t index, Eigen::Ref<Eigen::VectorXd> out) const {
  const Positions positions = positions_at(index);
  out.setZero();
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    const int offset = encoded_offset_[p];
    if (offset < 0) continue;
    const auto& spec = parameters_[p];
    if (spec.is_categorical() && spec.size() > 2)
      out[offset + positions[p]] = 1.0;
    else
      out[offset] = static_cast<double>(positions[p]) / static_cast<double>(spec.size() - 1);
  }
}

Eigen::VectorXd SearchSpace::encode(const Configuration& configuration) const {
  const auto index = index_of(configuration);
  if (!index)
    throw UserError("cannot encode a configuration outside the space: " + to_string(*this, configuration));
  Eigen::VectorXd out(encoded_dimension_);
  encode_index(*index, out);
  return out;
}

std::string SearchSpace::describe() const {
  std::ostringstream out;
  out << parameters_.size() << " parameters, " << size_ << " valid of " << cartesian_size()
      << " combinations";
  return out.str();
}

nlohmann::json to_json(const SearchSpace& space, const Configuration& configuration) {
  AUTOTUNE_CHECK(configuration.size() == space.dimension(), "configuration of the wrong width");
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t p = 0; p < configuration.size(); ++p)
    out[space.parameters()[p].name()] = to_json(configuration[p]);
  return out;
}

Configuration configuration_from_json(const SearchSpace& space, const nlohmann::json& object) {
  if (!object.is_object()) throw UserError("configuration: expected a JSON object {\"name\": value, ...}");
  Configuration out;
  for (const auto& spec : space.parameters()) {
    if (!object.contains(spec.name()))
      throw UserError("configuration: missing parameter '" + spec.name() + "'");
    ParamValue value =
        param_value_from_json(object.at(spec.name()), "configuration: parameter '" + spec.name() + "'");
    const auto position = spec.position(value);
    if (!position)
      throw UserError("configuration: parameter '" + spec.name() + "': '" + to_string(value) +
                      "' is not in its domain");
    out.push_back(spec.values()[*position]);
  }
  for (const auto& [key, value] : object.items())
    if (!space.parameter_index(key)) throw UserError("configuration: unknown parameter '" + key + "'");
  return out;
}

std::string to_string(const SearchSpace& space, const Configuration& configuration) {
  const std::size_t shown = std::min(configuration.size(), space.dimension());
  return join(std::views::iota(std::size_t{0}, shown), " ", [&](std::size_t p) {
    return space.parameters()[p].name() + "=" + to_string(configuration[p]);
  });
}

}  // namespace autotune::search
