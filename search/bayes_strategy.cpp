// bayes: Bayesian optimisation with a Gaussian-process surrogate.
//
//  - Objective model: GP (Matérn 5/2, ARD, gaussian_process.hpp) on the
//    successful observations, inputs encoded per parameter kind
//    (SearchSpace::encode) plus, with `alignment`, one feature per integer
//    knob whose alignment (the power of two dividing its value) varies
//    irregularly over its domain, targets log-transformed when all values
//    observed are positive, then standardised. Hyperparameters are refitted when the
//    data grew by `refit_growth` (relative) since the last fit; in between the
//    GP is only refactorised.
//  - Failures: a failed configuration joins the GP data at the worst
//    (standardised) value observed (`impute_failures`), so the mean turns
//    against its region and the variance there collapses; without it the
//    unexplored, failing corners of a space keep the largest uncertainty and
//    attract EI (on recorded GPU spaces two thirds of the evaluations failed).
//    On top, a kernel-smoothed feasibility estimate
//      p(x) = (c p0 + sum_ok k(x, x_i)) / (c + sum_all k(x, x_i))
//    over all observations with the GP's length scales (p0: observed success
//    rate, c: prior weight 0.5). The acquisition is EI(x) * p(x), so the
//    region of a failure is avoided, and a failure costs one evaluation.
//    With `failures: classified` a failure joins the GP at the successes'
//    model's prediction plus one standard deviation instead (its uncertainty
//    collapses, its neighbours' means stay where the successes put them), and
//    p(x) is a second GP regressed on success labels with its own length
//    scales (constrained EI, as in Gelbart et al., 2014).
//  - Monotone failures (`monotone_failures`, default true): a configuration
//    at or above a failure in every parameter is taken to fail and passed
//    over while any other candidate remains, in the model's proposals and in
//    the initial design, until a success at or above a failure contradicts
//    the rule (FailureDominance, below). With
//    `predict_failures_while_monotone`, failures join the GP as classified
//    ones do while the rule holds.
//  - Acquisition: maximised over the unseen configurations: all of them when
//    at most `exhaustive_limit` remain, otherwise `candidates` uniform random
//    ones plus greedy neighbour-move hill climbs (on expected improvement)
//    from the `local_starts` best of them and from the best observations.
//    `acquisition: ei` is expected improvement (xi in standardised units);
//    `hedge` (the default) is GP-Hedge over EI, probability of improvement
//    and a lower confidence bound: each nominates its best configuration,
//    one nominee is measured, drawn with probabilities exp(gain), and every
//    acquisition's gain grows by minus the refitted model's mean at its
//    nominee. Which acquisition suits a space is not known beforehand; the
//    portfolio learns it on the space itself.
//  - Initial design: `initial` configurations, the first `stratified_points`
//    (3) one uniform draw from each of as many compact strata
//    (stratified_pick: never worse than random sampling, in distribution),
//    the rest chosen greedily to maximise the minimum encoded distance to
//    everything chosen so far (maximin) from a random pool of at least 64.
//    The alignment features do not enter it (spreading over them too made
//    the recorded spaces' scores worse). `stratified_points: 0` is maximin
//    throughout, its first point random; `design: stratified` stratifies
//    the whole design. Maximin after the first points because the recorded
//    GPU spaces' optima often lie on corners, which it reaches first.
//  - Related runs (learn_from: the same kernel on another device or shape):
//    the first `transfer_points` points of the initial design are their best
//    configurations that lie in this space, each run's best first, then each
//    run's second best, and so on; maximin places the rest around them. Half
//    the design, by default: the related runs' best configurations are
//    usually good here too, but a device unlike theirs needs the spread.
//  - Plateaus (`ties: infer`, the default): a configuration implied by a
//    plateau of exactly tied measurements is passed over while any other
//    candidate remains (Plateau, below). With `after_tie: neighbours` (the
//    default), after a measurement that exactly ties an earlier one the next
//    proposal is the unseen configuration one parameter step from a best
//    observation with the largest EI (any unseen one when there is none);
//    `frontier` adds those one step beyond such a neighbour that failed.
//  - Batches (and configurations still being measured): each chosen
//    configuration joins the data with a believed value, the GP mean
//    (`batch: "believer"`, kriging believer) or the best value seen
//    (`batch: "liar"`, constant liar), before the next one is chosen.
//
// Options: initial (6), exhaustive_limit (2000), candidates (500),
// local_starts (6), local_steps (6), xi (0.01), batch ("believer"),
// fit_iterations (30), refit_growth (0.1), impute_failures (true),
// failures ("worst"), monotone_failures (true),
// predict_failures_while_monotone (false), acquisition ("hedge"),
// alignment (true), transfer_points (3), design ("maximin"),
// stratified_points (3), ties ("infer"), after_tie ("neighbours").
//
// The defaults were chosen on the six recorded spaces of ../shared/data/tuning
// and checked on recorded spaces they were not chosen on (docs/search.md,
// "Generalization"); `ties`, `stratified_points`, `after_tie` and
// `monotone_failures` on the evaluation protocol's development and validation
// splits ("The evaluation protocol").
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "search/gaussian_process.hpp"
#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

struct BayesOptions {
  int initial = 6;
  std::size_t exhaustive_limit = 2000;
  std::size_t candidates = 500;
  int local_starts = 6;
  int local_steps = 6;
  double xi = 0.01;
  bool believer = true;
  int fit_iterations = 30;
  double refit_growth = 0.1;
  bool impute_failures = true;
  bool hedge = true;        // a portfolio of acquisitions (GP-Hedge) instead of EI alone
  bool alignment = true;    // an alignment feature per integer knob (below)
  int transfer_points = 3;  // how many of the initial design may come from related runs
  // `failures: classified`: a failure joins the GP at the successes' model's
  // prediction plus one standard deviation (not the worst value), and the
  // feasibility estimate is a second GP fitted to success labels.
  bool classify_failures = false;
  // `design: stratified`: the initial design draws one uniformly random
  // configuration from each of `initial` equal-sized, compact strata, in a
  // random order (below); `maximin` spreads it greedily instead.
  bool stratified_design = false;
  // `stratified_points: N` (N > 0) with the maximin design: the first N
  // design points (transferred ones counted) are stratified over N strata,
  // maximin places the rest. 0: the whole design is `design`'s.
  int stratified_points = 3;
  // `ties: infer` (the default): configurations a plateau's exact ties imply
  // are on it are not proposed while others remain (Plateau, below); `model`
  // leaves them to the model.
  bool infer_ties = true;
  // After a measurement that exactly ties an earlier one
  // (latest_measurement_tied, below), the next model proposal is taken from
  // the best observations' neighbours (step_off_plateau, below):
  // `neighbours` (the default) or `frontier`; `model` leaves it to the
  // portfolio.
  enum class AfterTie { model, neighbours, frontier };
  AfterTie after_tie = AfterTie::neighbours;
  // `monotone_failures: true` (the default): a configuration at or above a
  // failed one in every parameter (each parameter's values in their order; a
  // categorical one at the same value) is taken to fail too and passed over
  // while others remain, until a success above a failure shows the space is
  // not so (FailureDominance, below).
  bool monotone_failures = true;
  // `predict_failures_while_monotone: true`: while the monotone rule holds
  // (monotone_failures, above), a failure joins the GP as with `failures:
  // classified` (the model's prediction plus one standard deviation) and not
  // at the worst value: the rule already keeps the search off what lies above
  // a failure, and the worst value would also drag down the feasible side of
  // the edge. Once the space contradicts the rule, failures are imputed as
  // `failures` says.
  bool predict_failures_while_monotone = false;
};

// Alignment of an integer knob: how many times 2 divides its value. Block and
// tile sizes often matter through it (a block of 32 or 128 fills whole warps or
// wavefronts, 48 or 112 does not), which no smooth function of the value's
// rank can express. A knob gets the feature, scaled to [0, 1] over its domain,
// when its values are positive integers whose alignment does not simply grow
// with the value (for powers of two it would repeat the rank).
std::vector<std::vector<double>> alignment_features(const SearchSpace& space) {
  std::vector<std::vector<double>> out(space.parameters().size());
  for (std::size_t p = 0; p < space.parameters().size(); ++p) {
    const auto& spec = space.parameters()[p];
    if (spec.is_categorical() || spec.size() < 3) continue;
    std::vector<double> twos;
    for (const auto& value : spec.values()) {
      const auto* integer = std::get_if<std::int64_t>(&value);
      if (integer == nullptr || *integer <= 0) {
        twos.clear();
        break;
      }
      twos.push_back(static_cast<double>(std::countr_zero(static_cast<std::uint64_t>(*integer))));
    }
    if (twos.empty() || std::is_sorted(twos.begin(), twos.end())) continue;
    const double top = *std::max_element(twos.begin(), twos.end());
    if (top <= 0) continue;
    for (double& t : twos) t /= top;
    out[p] = std::move(twos);
  }
  return out;
}

// The acquisitions of the portfolio, as columns of acquisitions().
enum Acquisition : int {
  kExpectedImprovement,
  kProbabilityOfImprovement,
  kLowerConfidenceBound,
  kAcquisitions
};
constexpr double kConfidenceWidth = 2.0;  // LCB = mean - 2 sigma
constexpr double kHedgeRate = 1.0;        // softmax temperature over the gains

constexpr double kFeasibilityPriorWeight = 0.5;
constexpr double kFeasibilityFloor = 0.02;  // the classifier's least probability of success

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }

class BayesStrategy final : public IndexedStrategy {
 public:
  BayesStrategy(const SearchSpace& space, std::uint64_t seed, BayesOptions options)
      : IndexedStrategy(space, seed, "bayes"),
        options_(options),
        alignment_(options.alignment ? alignment_features(space)
                                     : std::vector<std::vector<double>>(space.parameters().size())),
        aligned_count_(static_cast<int>(
            std::count_if(alignment_.begin(), alignment_.end(), [](const auto& f) { return !f.empty(); }))),
        gp_(feature_dimension()),
        feasibility_(feature_dimension()),
        failure_dominance_(space) {}

 private:
  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> chosen;
    std::size_t successes = 0;
    for (const auto& o : history()) successes += o.value.has_value();
    if (history().size() + pending_.size() < static_cast<std::size_t>(options_.initial) || successes < 2 ||
        space_.encoded_dimension() == 0) {
      chosen = design(k);
    } else {
      chosen = model_based(k);
    }
    for (std::uint64_t index : chosen) pending_.insert(index);
    return chosen;
  }

  // The related runs' configurations that lie in this space, ranked within
  // their run and interleaved: every run's best, then every run's second
  // best, and so on. The initial design starts with them.
  void learn_from(const std::vector<std::vector<Observation>>& related_runs) override {
    std::vector<std::vector<std::uint64_t>> ranked;
    for (const auto& run : related_runs) {
      std::vector<std::pair<double, std::uint64_t>> valid;
      for (const auto& o : run)
        if (o.value)
          if (const auto index = space_.index_of(o.configuration)) valid.push_back({*o.value, *index});
      std::stable_sort(valid.begin(), valid.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      ranked.emplace_back();
      for (const auto& v : valid) ranked.back().push_back(v.second);
    }
    transferred_.clear();
    std::unordered_set<std::uint64_t> listed;
    for (std::size_t rank = 0;; ++rank) {
      bool any = false;
      for (const auto& run : ranked) {
        if (rank >= run.size()) continue;
        any = true;
        if (listed.insert(run[rank]).second) transferred_.push_back(run[rank]);
      }
      if (!any) break;
    }
  }

  void observed(const std::vector<IndexedObservation>& batch) override {
    for (const auto& o : batch) pending_.erase(o.index);
    if (options_.monotone_failures)
      for (const auto& o : batch) failure_dominance_.add(space_.positions_at(o.index), o.value.has_value());
    if (options_.infer_ties)
      for (const auto& o : batch)
        if (o.value) join_plateau(o.index, *o.value);
  }

  // A plateau: configurations measured at exactly one value (relative
  // difference at most 1e-9: a deterministic target's ties, never a noisy
  // measurement's). Two members that differ in one parameter alone suggest
  // that parameter does not matter on the plateau, unless a measurement
  // differing from a member in that parameter alone has another value. A
  // configuration that differs from a member only in parameters that do not
  // matter is taken to be on the plateau too: measuring it would return the
  // plateau's value again. Kernels make such plateaus (an engine or a deeper
  // pipeline that no longer matters once a tile is large), and the model,
  // which sees no reason for a tie, keeps proposing their members, each as
  // good as the best seen and no better.
  struct Plateau {
    double value;
    std::vector<Positions> members;
    std::vector<bool> tied, differs;  // per parameter: seen to tie alone; seen to change the value alone
    bool implies(std::size_t p) const { return tied[p] && !differs[p]; }
  };

  static bool same_value(double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
  }

  // The index in plateaus_ of the plateau at `value`, made when there is none.
  std::size_t plateau_at(double value) {
    for (std::size_t i = 0; i < plateaus_.size(); ++i)
      if (same_value(plateaus_[i].value, value)) return i;
    const std::size_t n = space_.parameters().size();
    plateaus_.push_back(Plateau{value, {}, std::vector<bool>(n, false), std::vector<bool>(n, false)});
    return plateaus_.size() - 1;
  }

  void join_plateau(std::uint64_t index, double value) {
    Positions at = space_.positions_at(index);
    const std::size_t own = plateau_at(value);
    for (auto& plateau : plateaus_)
      for (const auto& member : plateau.members) {
        std::size_t differing = 0, parameter = 0;
        for (std::size_t p = 0; p < at.size(); ++p)
          if (member[p] != at[p]) {
            ++differing;
            parameter = p;
          }
        if (differing != 1) continue;
        if (&plateau == &plateaus_[own]) {
          plateau.tied[parameter] = true;
        } else {
          plateau.differs[parameter] = true;
          plateaus_[own].differs[parameter] = true;
        }
      }
    plateaus_[own].members.push_back(std::move(at));
  }

  // The plateaus with a parameter that does not matter on them: only these imply anything.
  std::vector<const Plateau*> implying_plateaus() const {
    std::vector<const Plateau*> out;
    for (const auto& plateau : plateaus_)
      for (std::size_t p = 0; p < plateau.tied.size(); ++p)
        if (plateau.implies(p)) {
          out.push_back(&plateau);
          break;
        }
    return out;
  }

  static bool on_plateau(const Positions& at, const Plateau& plateau) {
    for (const auto& member : plateau.members) {
      bool implied = true;
      for (std::size_t p = 0; p < at.size() && implied; ++p)
        implied = member[p] == at[p] || plateau.implies(p);
      if (implied) return true;
    }
    return false;
  }
  void released(const std::vector<std::uint64_t>& indices) override {
    for (std::uint64_t index : indices) pending_.erase(index);
  }

  // Failures of resources (too many threads, too large a tile for the
  // buffers) grow with the parameters: what fails at some values fails at
  // larger ones. On none of the 26 recorded and simulated spaces with
  // failures of the evaluation protocol is the optimum at or above a failure,
  // and on 7 of them (five of the simulator's, two convolutions) no such
  // configuration succeeds (docs/search.md, "Failures grow with the
  // parameters"). Taken as a rule while the space's own measurements agree
  // with it: one success at or above a failure turns it off for the run.
  class FailureDominance {
   public:
    // A categorical parameter's values have no order: there the rule needs the same value.
    explicit FailureDominance(const SearchSpace& space) {
      for (const auto& parameter : space.parameters()) unordered_.push_back(parameter.is_categorical());
    }
    void add(Positions at, bool succeeded) {
      if (!consistent_) return;
      auto& own = succeeded ? successes_ : failures_;
      const auto& other = succeeded ? failures_ : successes_;
      for (const auto& o : other)
        if (succeeded ? at_or_above(at, o) : at_or_above(o, at)) consistent_ = false;
      own.push_back(std::move(at));
    }
    bool active() const { return consistent_ && !failures_.empty(); }
    bool implies_failure(const Positions& at) const {
      return active() && std::any_of(failures_.begin(), failures_.end(),
                                     [&](const Positions& failure) { return at_or_above(at, failure); });
    }

   private:
    bool at_or_above(const Positions& a, const Positions& b) const {
      for (std::size_t p = 0; p < a.size(); ++p)
        if (a[p] < b[p] || (unordered_[p] && a[p] != b[p])) return false;
      return true;
    }
    std::vector<bool> unordered_;
    std::vector<Positions> failures_, successes_;
    bool consistent_ = true;
  };

  // Drops from `indices` the configurations implied to fail while at least
  // `needed` others remain; keeps them all where none does, and where some
  // do, as many of the implied as make up `needed`.
  void pass_over_implied_failures(std::vector<std::uint64_t>& indices, std::size_t needed) const {
    if (!failure_dominance_.active()) return;
    std::vector<std::uint64_t> kept, implied;
    for (std::uint64_t index : indices)
      (failure_dominance_.implies_failure(space_.positions_at(index)) ? implied : kept).push_back(index);
    if (kept.empty()) return;
    for (std::size_t i = 0; kept.size() < needed && i < implied.size(); ++i) kept.push_back(implied[i]);
    indices = std::move(kept);
  }

  // The GP's inputs; without `with_alignment`, the space's encoding alone.
  Eigen::MatrixXd encode(const std::vector<std::uint64_t>& indices, bool with_alignment = true) const {
    const int base = space_.encoded_dimension();
    const int aligned = with_alignment ? aligned_count_ : 0;
    Eigen::MatrixXd out(static_cast<Eigen::Index>(indices.size()), std::max(1, base + aligned));
    out.setZero();
    if (base == 0) return out;
    Eigen::VectorXd row(base);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      space_.encode_index(indices[i], row);
      out.row(static_cast<Eigen::Index>(i)).head(base) = row.transpose();
      if (aligned == 0) continue;
      const Positions positions = space_.positions_at(indices[i]);
      int column = base;
      for (std::size_t p = 0; p < alignment_.size(); ++p)
        if (!alignment_[p].empty()) out(static_cast<Eigen::Index>(i), column++) = alignment_[p][positions[p]];
    }
    return out;
  }

  int feature_dimension() const { return std::max(1, space_.encoded_dimension() + aligned_count_); }

  // Distinct unseen indices not in `exclude`, uniformly at random.
  std::vector<std::uint64_t> random_candidates(std::size_t count,
                                               const std::unordered_set<std::uint64_t>& exclude) {
    std::vector<std::uint64_t> out;
    std::unordered_set<std::uint64_t> taken(exclude);
    const std::uint64_t available = space_.size() - seen_count();
    std::size_t attempts = 0;
    while (out.size() < count && out.size() < available && attempts++ < count * 20) {
      const auto index = random_unseen();
      if (!index) break;
      if (taken.insert(*index).second) out.push_back(*index);
    }
    return out;
  }

  std::vector<std::uint64_t> design(std::size_t k) {
    std::vector<std::uint64_t> existing;
    for (const auto& o : history()) existing.push_back(o.index);
    existing.insert(existing.end(), pending_.begin(), pending_.end());
    // The related runs' best first (learn_from), then the stratified points, then maximin.
    std::vector<std::uint64_t> out;
    for (std::uint64_t index : transferred_) {
      if (out.size() >= k ||
          existing.size() + out.size() >= static_cast<std::size_t>(options_.transfer_points))
        break;
      if (!seen(index)) out.push_back(index);  // pending ones are seen; the list has no repeats
    }
    existing.insert(existing.end(), out.begin(), out.end());
    const auto stratified_limit = options_.stratified_design
                                      ? std::numeric_limits<std::size_t>::max()
                                      : static_cast<std::size_t>(options_.stratified_points);
    while (out.size() < k && existing.size() < stratified_limit) {
      const auto index = stratified_pick(existing);
      if (!index) break;
      out.push_back(*index);
      existing.push_back(*index);
    }
    if (out.size() >= k) return out;
    std::vector<std::uint64_t> pool =
        random_candidates(std::max<std::size_t>(64, 16 * k), {out.begin(), out.end()});
    pass_over_implied_failures(pool, k - out.size());
    if (pool.empty()) return out;
    const Eigen::MatrixXd pool_x = encode(pool, false);
    Eigen::VectorXd nearest =
        Eigen::VectorXd::Constant(pool_x.rows(), std::numeric_limits<double>::infinity());
    const auto account = [&](const Eigen::VectorXd& point) {
      nearest = nearest.cwiseMin((pool_x.rowwise() - point.transpose()).rowwise().squaredNorm());
    };
    if (!existing.empty()) {
      const Eigen::MatrixXd existing_x = encode(existing, false);
      for (Eigen::Index i = 0; i < existing_x.rows(); ++i) account(existing_x.row(i).transpose());
    }
    std::vector<bool> used(pool.size(), false);
    for (std::size_t picked = 0; out.size() < k && picked < pool.size(); ++picked) {
      Eigen::Index pick = 0;
      if (existing.empty() && out.empty()) {
        pick = 0;  // the pool is random: its first member is a random start
      } else {
        double best = -1;
        for (Eigen::Index i = 0; i < pool_x.rows(); ++i)
          if (!used[i] && nearest[i] > best) {
            best = nearest[i];
            pick = i;
          }
      }
      used[pick] = true;
      out.push_back(pool[pick]);
      account(pool_x.row(pick).transpose());
    }
    return out;
  }

  // Stratified design. The space (or, when larger, a uniform random pool of
  // it) is cut into `initial` strata of equal size by recursive median splits
  // along the encoded coordinate that varies most, so each stratum is a
  // compact region; the strata are visited in a random order and each gives
  // one configuration drawn uniformly from its unseen members. A stratum
  // holding a configuration already measured, pending or transferred (by its
  // nearest pool member) is skipped. Every design point is then a uniform
  // draw from the space, and for any m, with p_j the share of stratum j below
  // a value t, the chance that the best of m points is above t is an average
  // of products of m distinct (1 - p_j), at most (1 - mean p_j)^m by
  // Maclaurin's inequality: the best of the first m is at least as good as
  // the best of m uniform draws, in distribution, while the points still
  // spread over the space (no two from one stratum).
  void build_strata() {
    const std::size_t pool_limit =
        std::max<std::size_t>(256, 32 * static_cast<std::size_t>(options_.initial));
    if (space_.size() <= pool_limit) {
      for (std::uint64_t i = 0; i < space_.size(); ++i) strata_pool_.push_back(i);
    } else {
      std::unordered_set<std::uint64_t> drawn;
      const auto last = static_cast<std::int64_t>(space_.size() - 1);
      while (strata_pool_.size() < pool_limit)
        if (const auto index = static_cast<std::uint64_t>(rng_.uniform_int(0, last));
            drawn.insert(index).second)
          strata_pool_.push_back(index);
    }
    std::shuffle(strata_pool_.begin(), strata_pool_.end(), rng_);  // ties split at random
    strata_pool_x_ = encode(strata_pool_, false);
    std::vector<Eigen::Index> rows(strata_pool_.size());
    std::iota(rows.begin(), rows.end(), 0);
    const int strata = options_.stratified_design ? options_.initial : options_.stratified_points;
    const std::size_t parts = std::min(strata_pool_.size(), static_cast<std::size_t>(strata));
    stratum_of_.assign(strata_pool_.size(), 0);
    split_strata(rows, 0, rows.size(), parts);
    strata_order_.resize(parts);
    std::iota(strata_order_.begin(), strata_order_.end(), 0);
    std::shuffle(strata_order_.begin(), strata_order_.end(), rng_);
  }

  void split_strata(std::vector<Eigen::Index>& rows, std::size_t begin, std::size_t end, std::size_t parts) {
    if (parts == 1) {
      for (std::size_t i = begin; i < end; ++i)
        stratum_of_[static_cast<std::size_t>(rows[i])] = strata_count_;
      ++strata_count_;
      return;
    }
    Eigen::Index widest = 0;
    double widest_variance = -1;
    for (Eigen::Index d = 0; d < strata_pool_x_.cols(); ++d) {
      double sum = 0, squares = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const double x = strata_pool_x_(rows[i], d);
        sum += x;
        squares += x * x;
      }
      const double n = static_cast<double>(end - begin);
      if (const double variance = squares / n - (sum / n) * (sum / n); variance > widest_variance) {
        widest_variance = variance;
        widest = d;
      }
    }
    std::stable_sort(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                     rows.begin() + static_cast<std::ptrdiff_t>(end), [&](Eigen::Index a, Eigen::Index b) {
                       return strata_pool_x_(a, widest) < strata_pool_x_(b, widest);
                     });
    const std::size_t left_parts = parts / 2;
    const std::size_t middle =
        begin +
        static_cast<std::size_t>(std::llround(static_cast<double>(end - begin) *
                                              static_cast<double>(left_parts) / static_cast<double>(parts)));
    split_strata(rows, begin, middle, left_parts);
    split_strata(rows, middle, end, parts - left_parts);
  }

  // The next stratified design point given the configurations already placed, or nothing when every
  // stratum is covered.
  std::optional<std::uint64_t> stratified_pick(const std::vector<std::uint64_t>& existing) {
    if (strata_order_.empty()) build_strata();  // a space has at least one configuration
    std::vector<bool> covered(strata_count_, false);
    if (!existing.empty()) {
      const Eigen::MatrixXd existing_x = encode(existing, false);
      for (Eigen::Index i = 0; i < existing_x.rows(); ++i) {
        Eigen::Index nearest = 0;
        (strata_pool_x_.rowwise() - existing_x.row(i)).rowwise().squaredNorm().minCoeff(&nearest);
        covered[stratum_of_[static_cast<std::size_t>(nearest)]] = true;
      }
    }
    const std::unordered_set<std::uint64_t> placed(existing.begin(), existing.end());
    for (std::size_t stratum : strata_order_) {
      if (covered[stratum]) continue;
      std::vector<std::uint64_t> members;
      for (std::size_t i = 0; i < strata_pool_.size(); ++i)
        if (stratum_of_[i] == stratum && !seen(strata_pool_[i]) && !placed.count(strata_pool_[i]))
          members.push_back(strata_pool_[i]);
      pass_over_implied_failures(members, 1);
      if (members.empty()) continue;
      return members[static_cast<std::size_t>(
          rng_.uniform_int(0, static_cast<std::int64_t>(members.size()) - 1))];
    }
    return std::nullopt;
  }

  struct Model {
    bool log_scale = true;
    double y_mean = 0, y_scale = 1, best = 0;  // best in standardised units
    Eigen::MatrixXd ok_x, all_x;
    double success_rate = 1;
    bool has_failures = false;
  };

  double transform(double v, const Model& m) const {
    return ((m.log_scale ? std::log(v) : v) - m.y_mean) / m.y_scale;
  }

  Model build_model() {
    Model m;
    std::vector<std::uint64_t> ok, all;
    std::vector<double> values;
    for (const auto& o : history()) {
      all.push_back(o.index);
      if (!o.value) continue;
      ok.push_back(o.index);
      values.push_back(*o.value);
    }
    m.log_scale = *std::min_element(values.begin(), values.end()) > 0;
    Eigen::VectorXd y(static_cast<Eigen::Index>(values.size()));
    for (std::size_t i = 0; i < values.size(); ++i) y[i] = m.log_scale ? std::log(values[i]) : values[i];
    m.y_mean = y.mean();
    const double spread = std::sqrt((y.array() - m.y_mean).square().mean());
    m.y_scale = spread > 1e-12 ? spread : 1.0;
    y = (y.array() - m.y_mean) / m.y_scale;
    m.best = y.minCoeff();
    m.ok_x = encode(ok);
    m.all_x = encode(all);
    m.has_failures = ok.size() < all.size();
    m.success_rate = static_cast<double>(ok.size()) / static_cast<double>(all.size());

    Eigen::MatrixXd gp_x = m.ok_x;
    if (options_.impute_failures && m.has_failures) {
      // A failed configuration joins the GP at the worst value seen: the mean
      // turns against its region and its variance (so EI) collapses there.
      std::vector<std::uint64_t> failed;
      for (const auto& o : history())
        if (!o.value) failed.push_back(o.index);
      const Eigen::Index n_ok = gp_x.rows(), n_failed = static_cast<Eigen::Index>(failed.size());
      const double worst = y.maxCoeff();
      const Eigen::MatrixXd failed_x = encode(failed);
      Eigen::VectorXd imputed = Eigen::VectorXd::Constant(n_failed, worst);
      if (options_.classify_failures ||
          (options_.predict_failures_while_monotone && failure_dominance_.active())) {
        // A failure says nothing about how fast its configuration would be:
        // it only removes the uncertainty there. At the worst value it drags
        // down its feasible neighbours too, where the optimum of a kernel
        // often lies (the largest tile that still fits).
        Eigen::VectorXd variance;
        gp_.set_data(gp_x, y);
        gp_.factorize();
        gp_.predict(failed_x, imputed, variance);
        imputed = imputed.array() + variance.array().sqrt();
        imputed = imputed.cwiseMin(worst);
      }
      gp_x.conservativeResize(n_ok + n_failed, Eigen::NoChange);
      gp_x.bottomRows(n_failed) = failed_x;
      y.conservativeResize(n_ok + n_failed);
      y.tail(n_failed) = imputed;
    }
    if (options_.classify_failures && m.has_failures) {
      // Success labels (1 or 0, centred on the success rate) regressed by a
      // GP with its own length scales: which parameters decide failure need
      // not be those that decide speed.
      Eigen::VectorXd labels(m.all_x.rows());
      Eigen::Index row = 0;
      for (const auto& o : history()) labels[row++] = (o.value ? 1.0 : 0.0) - m.success_rate;
      feasibility_.set_data(m.all_x, labels);
      const std::size_t count = static_cast<std::size_t>(labels.size());
      if (last_feasibility_fit_size_ == 0 ||
          static_cast<double>(count) >=
              static_cast<double>(last_feasibility_fit_size_) * (1.0 + options_.refit_growth) + 1.0) {
        feasibility_.fit(options_.fit_iterations, last_feasibility_fit_size_ == 0 || count < 100);
        last_feasibility_fit_size_ = count;
      } else {
        feasibility_.factorize();
      }
    }
    gp_.set_data(gp_x, y);
    const std::size_t n = static_cast<std::size_t>(y.size());
    if (last_fit_size_ == 0 ||
        static_cast<double>(n) >= static_cast<double>(last_fit_size_) * (1.0 + options_.refit_growth) + 1.0) {
      // The first fit, and fits while data are few, also start from the
      // defaults (the landscape of the likelihood still changes a lot); later
      // fits continue from the previous optimum with half the iterations.
      const bool early = last_fit_size_ == 0 || n < 100;
      gp_.fit(early ? options_.fit_iterations : std::max(1, options_.fit_iterations / 2), early);
      last_fit_size_ = n;
    } else {
      gp_.factorize();
    }
    data_x_ = gp_x;
    data_y_ = y;
    return m;
  }

  // Adds a believed observation at `x` (then refactorises).
  void believe(const Eigen::MatrixXd& x, const Model& m) {
    Eigen::VectorXd mean, variance;
    gp_.predict(x, mean, variance);
    const Eigen::Index n = data_x_.rows();
    data_x_.conservativeResize(n + x.rows(), Eigen::NoChange);
    data_x_.bottomRows(x.rows()) = x;
    data_y_.conservativeResize(n + x.rows());
    for (Eigen::Index i = 0; i < x.rows(); ++i) data_y_[n + i] = options_.believer ? mean[i] : m.best;
    gp_.set_data(data_x_, data_y_);
    gp_.factorize();
  }

  // One column per Acquisition, each larger-is-better and multiplied by the
  // feasibility estimate (LCB through exp(-LCB), so the product ranks like
  // -LCB + log p).
  Eigen::MatrixXd acquisitions(const Eigen::MatrixXd& x, const Model& m) const {
    Eigen::VectorXd mean, variance;
    gp_.predict(x, mean, variance);
    Eigen::MatrixXd out(x.rows(), static_cast<Eigen::Index>(kAcquisitions));
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double sigma = std::sqrt(variance[i]);
      const double gain = m.best - mean[i] - options_.xi;
      const double z = gain / sigma;
      out(i, kExpectedImprovement) = std::max(0.0, gain * normal_cdf(z) + sigma * normal_pdf(z));
      out(i, kProbabilityOfImprovement) = normal_cdf(z);
      out(i, kLowerConfidenceBound) = std::exp(std::min(50.0, -(mean[i] - kConfidenceWidth * sigma)));
    }
    if (m.has_failures && options_.classify_failures) {
      Eigen::VectorXd p, p_variance;
      feasibility_.predict(x, p, p_variance);
      for (Eigen::Index i = 0; i < x.rows(); ++i)
        out.row(i) *= std::clamp(p[i] + m.success_rate, kFeasibilityFloor, 1.0);
    } else if (m.has_failures) {
      const Eigen::MatrixXd k_all = gp_.correlation(x, m.all_x);
      const Eigen::MatrixXd k_ok = gp_.correlation(x, m.ok_x);
      const double c = kFeasibilityPriorWeight;
      for (Eigen::Index i = 0; i < x.rows(); ++i)
        out.row(i) *= (c * m.success_rate + k_ok.row(i).sum()) / (c + k_all.row(i).sum());
    }
    return out;
  }

  Eigen::VectorXd acquisition(const Eigen::MatrixXd& x, const Model& m) const {
    return acquisitions(x, m).col(kExpectedImprovement);
  }

  // GP-Hedge (Hoffman et al., 2011): each acquisition's gain grows by how
  // good the model now believes the configuration it nominated last time is.
  void credit_nominees() {
    if (nominees_.rows() == 0) return;
    Eigen::VectorXd mean, variance;
    gp_.predict(nominees_, mean, variance);
    for (Eigen::Index row = 0; row < nominees_.rows(); ++row) gains_[row % kAcquisitions] -= mean[row];
    nominees_.resize(0, nominees_.cols());
  }

  int draw_acquisition() {
    const double top = gains_.maxCoeff();
    Eigen::ArrayXd weight = (kHedgeRate * (gains_.array() - top)).exp();
    double r = rng_.uniform(0.0, weight.sum());
    for (int a = 0; a < kAcquisitions; ++a) {
      r -= weight[a];
      if (r <= 0) return a;
    }
    return kAcquisitions - 1;
  }

  // Whether the latest measurement exactly ties an earlier one: the model
  // proposed a plateau's member, and sees no reason to stop. The members of a
  // plateau often reach each other only by changing two or three parameters
  // at once, which `ties: infer` cannot learn from; the way off the plateau
  // that a performance engineer takes is one parameter of the best
  // configuration at a time.
  bool latest_measurement_tied() const {
    const auto& h = history();
    if (h.empty() || !h.back().value) return false;
    return std::any_of(h.begin(), h.end() - 1,
                       [&](const auto& o) { return o.value && same_value(*o.value, *h.back().value); });
  }

  // Where to step off a plateau: the unseen configurations one parameter step
  // from an observation at the best value and, with `after_tie: frontier`,
  // those one step beyond such a neighbour that failed. A step that does not
  // compile (too large a tile for the depth, say) may compile with a second
  // parameter changed, and the optimum can lie there. Only beyond failures: the
  // configurations beyond every measured neighbour outnumber the single
  // steps several times over, and EI over them all leaves the single steps
  // too soon. Not the default: it leaves add tiled, on the protocol's test
  // split, below random search (docs/search.md, "Beyond a failed step").
  std::unordered_set<std::uint64_t> step_off_plateau() const {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& o : history())
      if (o.value) best = std::min(best, *o.value);
    const bool beyond = options_.after_tie == BayesOptions::AfterTie::frontier;
    std::unordered_set<std::uint64_t> failed;
    if (beyond)
      for (const auto& o : history())
        if (!o.value) failed.insert(o.index);
    std::unordered_set<std::uint64_t> out;
    for (const auto& o : history())
      if (o.value && same_value(*o.value, best))
        for (std::uint64_t n : space_.neighbour_indices(o.index)) {
          if (!seen(n)) out.insert(n);
          if (beyond && failed.count(n))
            for (std::uint64_t m : space_.neighbour_indices(n))
              if (!seen(m)) out.insert(m);
        }
    return out;
  }

  std::vector<std::uint64_t> model_based(std::size_t k) {
    const Model m = build_model();
    if (!pending_.empty()) {
      const std::vector<std::uint64_t> pending(pending_.begin(), pending_.end());
      believe(encode(pending), m);
    }
    // Candidate set.
    std::vector<std::uint64_t> candidates;
    const std::uint64_t unseen = space_.size() - seen_count();
    if (unseen <= options_.exhaustive_limit) {
      for (std::uint64_t index = 0; index < space_.size(); ++index)
        if (!seen(index)) candidates.push_back(index);
    } else {
      candidates = random_candidates(options_.candidates, {});
    }
    if (candidates.empty()) return {};
    Eigen::MatrixXd x = encode(candidates);
    if (options_.hedge) credit_nominees();
    // One GP prediction per candidate: the climbs work on the EI column, and
    // only the configurations they add are scored again.
    Eigen::MatrixXd scores = acquisitions(x, m);
    if (unseen > options_.exhaustive_limit) {
      Eigen::VectorXd expected_improvement = scores.col(kExpectedImprovement);
      const Eigen::Index before = x.rows();
      refine_locally(candidates, x, expected_improvement, m);
      if (x.rows() > before) {
        scores.conservativeResize(x.rows(), Eigen::NoChange);
        scores.bottomRows(x.rows() - before) = acquisitions(x.bottomRows(x.rows() - before), m);
      }
    }

    std::vector<std::uint64_t> chosen;
    std::vector<bool> taken(candidates.size(), false);
    const auto plateaus = implying_plateaus();
    if (!plateaus.empty() || failure_dominance_.active()) {
      // Members implied by a known plateau, and configurations implied to
      // fail, are passed over while anything else remains.
      std::vector<bool> implied(candidates.size());
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        const Positions at = space_.positions_at(candidates[i]);
        implied[i] = failure_dominance_.implies_failure(at) ||
                     std::any_of(plateaus.begin(), plateaus.end(),
                                 [&](const Plateau* plateau) { return on_plateau(at, *plateau); });
      }
      if (std::find(implied.begin(), implied.end(), false) != implied.end()) taken = implied;
    }
    // The untaken candidate with the largest score in `column`, among those `allowed` (all when null).
    const auto best_untaken = [&](int column, const std::unordered_set<std::uint64_t>* allowed = nullptr) {
      Eigen::Index pick = -1;
      for (Eigen::Index i = 0; i < scores.rows(); ++i)
        if (!taken[i] && (!allowed || allowed->count(candidates[static_cast<std::size_t>(i)])) &&
            (pick < 0 || scores(i, column) > scores(pick, column)))
          pick = i;
      return pick;
    };
    const bool step_off = options_.after_tie != BayesOptions::AfterTie::model && latest_measurement_tied();
    const std::unordered_set<std::uint64_t> step_off_targets =
        step_off ? step_off_plateau() : std::unordered_set<std::uint64_t>{};
    while (chosen.size() < k && chosen.size() < candidates.size()) {
      Eigen::Index pick = -1;
      // The candidates passed over above count as taken: none may be left below k.
      if (best_untaken(kExpectedImprovement) < 0) break;
      if (options_.hedge) {
        const Eigen::Index rows = nominees_.rows();
        nominees_.conservativeResize(rows + kAcquisitions, x.cols());
        for (int a = 0; a < kAcquisitions; ++a) nominees_.row(rows + a) = x.row(best_untaken(a));
        pick = best_untaken(draw_acquisition());
      } else {
        pick = best_untaken(kExpectedImprovement);
      }
      // The portfolio has nominated all the same: its gains learn from every pick's refit.
      if (step_off) {
        pick = best_untaken(kExpectedImprovement, &step_off_targets);
        if (pick < 0) pick = best_untaken(kExpectedImprovement);
      }
      if (pick < 0) break;
      taken[pick] = true;
      chosen.push_back(candidates[pick]);
      if (chosen.size() < k) {
        believe(x.row(pick), m);
        scores = acquisitions(x, m);
      }
    }
    return chosen;
  }

  // Greedy neighbour moves from the best candidates and best observations;
  // every configuration visited joins the candidate set.
  void refine_locally(std::vector<std::uint64_t>& candidates, Eigen::MatrixXd& x, Eigen::VectorXd& score,
                      const Model& m) {
    std::unordered_map<std::uint64_t, double> known;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      known[candidates[i]] = score[static_cast<Eigen::Index>(i)];
    std::vector<std::size_t> order(candidates.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t starts = std::min<std::size_t>(options_.local_starts, order.size());
    std::partial_sort(order.begin(), order.begin() + starts, order.end(),
                      [&](std::size_t a, std::size_t b) { return score[a] > score[b]; });
    struct Walker {
      std::uint64_t at;
      double value;
      bool active = true;
    };
    std::vector<Walker> walkers;
    for (std::size_t i = 0; i < starts; ++i) walkers.push_back({candidates[order[i]], score[order[i]]});
    std::vector<std::pair<double, std::uint64_t>> best_observed;
    for (const auto& o : history())
      if (o.value) best_observed.push_back({*o.value, o.index});
    std::sort(best_observed.begin(), best_observed.end());
    for (std::size_t i = 0; i < best_observed.size() && i < 3; ++i)
      walkers.push_back({best_observed[i].second, -1.0});

    std::vector<std::uint64_t> added;
    for (int step = 0; step < options_.local_steps; ++step) {
      std::vector<std::uint64_t> fresh;
      std::vector<std::vector<std::uint64_t>> options_of(walkers.size());
      for (std::size_t w = 0; w < walkers.size(); ++w) {
        if (!walkers[w].active) continue;
        for (std::uint64_t n : space_.neighbour_indices(walkers[w].at)) {
          if (seen(n) || pending_.count(n)) continue;
          options_of[w].push_back(n);
          if (!known.count(n)) {
            known[n] = 0;
            fresh.push_back(n);
          }
        }
      }
      if (!fresh.empty()) {
        const Eigen::VectorXd fresh_score = acquisition(encode(fresh), m);
        for (std::size_t i = 0; i < fresh.size(); ++i)
          known[fresh[i]] = fresh_score[static_cast<Eigen::Index>(i)];
        added.insert(added.end(), fresh.begin(), fresh.end());
      }
      bool moved = false;
      for (std::size_t w = 0; w < walkers.size(); ++w) {
        if (!walkers[w].active) continue;
        std::uint64_t best = walkers[w].at;
        double best_value = walkers[w].value;
        for (std::uint64_t n : options_of[w])
          if (known[n] > best_value) {
            best_value = known[n];
            best = n;
          }
        if (best == walkers[w].at) {
          walkers[w].active = false;
        } else {
          walkers[w] = {best, best_value};
          moved = true;
        }
      }
      if (!moved) break;
    }
    if (added.empty()) return;
    const Eigen::Index old = x.rows();
    candidates.insert(candidates.end(), added.begin(), added.end());
    x.conservativeResize(static_cast<Eigen::Index>(candidates.size()), Eigen::NoChange);
    x.bottomRows(static_cast<Eigen::Index>(added.size())) = encode(added);
    score.conservativeResize(static_cast<Eigen::Index>(candidates.size()));
    for (std::size_t i = 0; i < added.size(); ++i)
      score[old + static_cast<Eigen::Index>(i)] = known[added[i]];
  }

  BayesOptions options_;
  std::vector<std::vector<double>> alignment_;  // per parameter: its feature per position, or empty
  int aligned_count_ = 0;
  GaussianProcess gp_;
  GaussianProcess feasibility_;
  std::size_t last_fit_size_ = 0, last_feasibility_fit_size_ = 0;
  std::unordered_set<std::uint64_t> pending_;
  std::vector<std::uint64_t> transferred_;  // learn_from's ranking, best first
  Eigen::MatrixXd data_x_;
  Eigen::VectorXd data_y_;
  Eigen::VectorXd gains_ = Eigen::VectorXd::Zero(kAcquisitions);
  Eigen::MatrixXd nominees_;  // rows: the nominees of each acquisition, kAcquisitions per pick
  std::vector<Plateau> plateaus_;
  FailureDominance failure_dominance_;
  std::vector<std::uint64_t> strata_pool_;  // the space, or a uniform random pool of it
  Eigen::MatrixXd strata_pool_x_;
  std::vector<std::size_t> stratum_of_;  // per pool member
  std::size_t strata_count_ = 0;
  std::vector<std::size_t> strata_order_;  // the order strata are visited in
};

// A string option with a few accepted values; anything else is a UserError naming them.
std::string choice(StrategyOptions& options, const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& accepted) {
  std::string quoted, listed;
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    const std::string separator = i == 0 ? "" : i + 1 == accepted.size() ? " or " : ", ";
    quoted += separator + "\"" + accepted[i] + "\"";
    listed += (i == 0 ? "" : ", ") + accepted[i];
  }
  const auto value = options.get<std::string>(key, fallback, quoted);
  if (std::find(accepted.begin(), accepted.end(), value) == accepted.end())
    throw UserError("strategy 'bayes': option '" + key + "': '" + value +
                    "' is not accepted; accepted: " + listed);
  return value;
}

const StrategyRegistration registration(
    "bayes",
    [](const SearchSpace& space, std::uint64_t seed, StrategyOptions& options) -> std::unique_ptr<Strategy> {
      BayesOptions o;
      // Upper bounds far beyond use: each multiplies the work of a proposal or of a refit.
      o.initial = options.get_within<int>("initial", o.initial, 1, 100000);
      o.exhaustive_limit =
          options.get_within<std::size_t>("exhaustive_limit", o.exhaustive_limit, 0, 10000000);
      o.candidates = options.get_within<std::size_t>("candidates", o.candidates, 1, 1000000);
      o.local_starts = options.get_within<int>("local_starts", o.local_starts, 0, 1000);
      o.local_steps = options.get_within<int>("local_steps", o.local_steps, 0, 1000);
      o.xi = options.get_within<double>("xi", o.xi, 0, 100);
      o.fit_iterations = options.get_within<int>("fit_iterations", o.fit_iterations, 1, 10000);
      o.refit_growth = options.get_within<double>("refit_growth", o.refit_growth, 0, 1000);
      o.impute_failures = options.get<bool>("impute_failures", o.impute_failures, "true or false");
      o.classify_failures = choice(options, "failures", "worst", {"worst", "classified"}) == "classified";
      o.hedge = choice(options, "acquisition", "hedge", {"ei", "hedge"}) == "hedge";
      o.alignment = options.get<bool>("alignment", o.alignment, "true or false");
      o.transfer_points = options.get_within<int>("transfer_points", o.transfer_points, 0, 100000);
      o.stratified_design = choice(options, "design", "maximin", {"maximin", "stratified"}) == "stratified";
      o.stratified_points = options.get_within<int>("stratified_points", o.stratified_points, 0, 100000);
      o.infer_ties = choice(options, "ties", "infer", {"model", "infer"}) == "infer";
      const std::string after_tie =
          choice(options, "after_tie", "neighbours", {"neighbours", "frontier", "model"});
      o.after_tie = after_tie == "frontier"     ? BayesOptions::AfterTie::frontier
                    : after_tie == "neighbours" ? BayesOptions::AfterTie::neighbours
                                                : BayesOptions::AfterTie::model;
      o.believer = choice(options, "batch", "believer", {"believer", "liar"}) == "believer";
      o.monotone_failures = options.get<bool>("monotone_failures", o.monotone_failures, "true or false");
      o.predict_failures_while_monotone = options.get<bool>(
          "predict_failures_while_monotone", o.predict_failures_while_monotone, "true or false");
      return std::make_unique<BayesStrategy>(space, seed, o);
    });

}  // namespace

}  // namespace autotune::search
