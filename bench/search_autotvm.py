#!/usr/bin/python3
"""AutoTVM's XGBTuner on recorded tuning spaces, as a peer for search-bench.

AutoTVM (apache/tvm, python/tvm/autotvm/tuner, as it stood before its removal in February 2025,
commit 21095b98bb, Apache-2.0) is TVM's template tuner, a widely used model-based kernel tuner.
TVM cannot be built here, so this is our own implementation of its algorithm, with its defaults:

- ModelBasedTuner: the configurations of a plan are measured in the plan's order; while there is
  no plan (before the first fit), or in the last 5% of a plan (epsilon-greedy), a uniformly random
  unvisited configuration. After every `plan_size` (64) measurements the cost model is fitted again
  and a new plan of the `plan_size` best unvisited configurations it predicts is made.
- XGBoostCostModel with loss_type "reg" (the last default; "rank" gives rank:pairwise), on "knob"
  features: each parameter's value (a parameter of strings: its value's index). The default
  "itervar" features are read from a TVM schedule, which a recorded space does not have.
  Targets are speeds normalised by the best (flops in AutoTVM: here 1/time, or exp(-value) for an
  objective that is not a time), 0 for a failure. max_depth 3, eta 0.3, gamma 1e-4; up to 8000
  rounds, stopped when the average top-`plan_size` recall on the training data has not improved
  for 20 rounds (evaluated every second round).
- SimulatedAnnealingOptimizer: 128 parallel chains (persistent between plans), 500 iterations at
  most, temperature cooled linearly from 1 to 0, stopped after 50 iterations without a change to
  the best `plan_size`; a step changes one parameter to a random value (again until the result
  is a configuration of the space).

Measured one configuration at a time (AutoTVM's batch is the number of parallel builders, which only
moves where within a plan a fit happens). A configuration that failed in the recording costs one
evaluation (null in the trace). Trace format as search-bench's:
    {"<parent-dir>/<file-stem>": [[v1, v2, ...], ...]}   (null for a failure)

Use Debian's interpreter, which has python3-xgboost:  /usr/bin/python3 bench/search_autotvm.py ...
"""
import argparse
import functools
import heapq
import math
import sys

import numpy as np
import xgboost as xgb

import peer_runs

DEFAULTS = {"plan_size": 64, "loss_type": "reg"}


class Space:
    """A recorded space indexed as AutoTVM indexes its ConfigSpace: the mixed-radix number of the
    parameters' value indices, the first parameter varying fastest; valid = recorded."""

    def __init__(self, keys, tune_params, table):
        self.dims = [len(tune_params[k]) for k in keys]
        self.strides = [math.prod(self.dims[:j]) for j in range(len(self.dims))]
        self.values = {}      # index -> recorded value (None: failed)
        self.features = {}    # index -> knob feature vector
        lookup = [{v: i for i, v in enumerate(tune_params[k])} for k in keys]
        for config, value in table.items():
            knob = [lookup[j][v] for j, v in enumerate(config)]
            index = self.knob2point(knob)
            self.values[index] = value
            self.features[index] = [float(v) if isinstance(v, (int, float)) else float(knob[j])
                                    for j, v in enumerate(config)]
        self.valid = np.array(sorted(self.values))
        # AutoTVM's targets are speeds: 1/time, or exp(-value) for an objective that is not a time.
        self.as_time = all(v > 0 for v in self.values.values() if v is not None)

    def knob2point(self, knob):
        return sum(k * s for k, s in zip(knob, self.strides))

    def point2knob(self, point):
        knob = []
        for d in self.dims:
            knob.append(point % d)
            point //= d
        return knob

    def feature_matrix(self, points):
        return np.array([self.features[int(p)] for p in points], dtype=np.float32)

    def random_walk(self, point, rng):
        """One parameter set to a random value, again until the result is another recorded
        configuration (AutoTVM's ConfigSpace.random_walk)."""
        old = self.point2knob(point)
        new = list(old)
        new_point = point
        while new == old or new_point not in self.values:
            j = rng.integers(len(old))
            new[j] = int(rng.integers(self.dims[j]))
            new_point = self.knob2point(new)
        return new_point


def ranks_of(labels):
    """AutoTVM's get_rank: each item's rank, the largest first."""
    order = np.argsort(-labels)
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(order))
    return ranks


def average_recall(preds, labels, n):
    """AutoTVM's average recall-n curve score of a prediction of the training labels."""
    ranks = ranks_of(labels[np.argsort(preds)[::-1]])
    curve = [np.sum(ranks[:i] <= i) / (i + 1) for i in range(min(n, len(ranks)))]
    return np.sum(curve) / n


class RecallStopping(xgb.callback.TrainingCallback):
    """Stops when the average recall@n on the training data has not improved for `rounds` rounds,
    evaluated on every second round (AutoTVM's CustomCallback)."""

    def __init__(self, dtrain, labels, n, rounds=20):
        super().__init__()
        self.dtrain, self.labels, self.n, self.rounds = dtrain, labels, n, rounds
        self.best, self.best_epoch = float("-inf"), 0

    def after_iteration(self, model, epoch, evals_log):
        if epoch % 2 == 1:
            return False
        score = average_recall(model.predict(self.dtrain, output_margin=True), self.labels, self.n)
        if score > self.best:
            self.best, self.best_epoch = score, epoch
            return False
        return epoch - self.best_epoch >= self.rounds


def fit(space, xs, ys, plan_size, loss_type, rng):
    y = np.array(ys, dtype=float)
    y = y / max(y.max(), 1e-8)
    order = rng.permutation(len(xs))
    x_train, y_train = space.feature_matrix(np.array(xs)[order]), y[order]
    dtrain = xgb.DMatrix(x_train, y_train)
    params = {"max_depth": 3, "gamma": 0.0001, "min_child_weight": 1, "subsample": 1.0, "eta": 0.3,
              "lambda": 1.0, "alpha": 0, "verbosity": 0, "nthread": 1,
              "objective": "reg:squarederror" if loss_type == "reg" else "rank:pairwise"}
    return xgb.train(params, dtrain, num_boost_round=8000,
                     callbacks=[RecallStopping(dtrain, y_train, plan_size)])


def find_maximums(space, model, num, exclusive, chains, rng, n_iter=500, early_stop=50):
    """AutoTVM's SimulatedAnnealingOptimizer.find_maximums: the `num` best predicted configurations
    outside `exclusive` met by parallel annealing chains; `chains` holds the chains' points between
    calls (persistent)."""
    def predict(points):
        return model.predict(xgb.DMatrix(space.feature_matrix(points)))

    if chains[0] is None:
        size = min(128, len(space.valid))
        chains[0] = rng.choice(space.valid, size=size, replace=False)
    points = chains[0]
    scores = predict(points)
    heap = [(float("-inf"), -1 - i) for i in range(num)]
    heapq.heapify(heap)
    in_heap = set(exclusive)
    in_heap.update(p for _, p in heap)

    def offer(candidate_scores, candidate_points):
        changed = False
        for s, p in zip(candidate_scores, candidate_points):
            p = int(p)
            if s > heap[0][0] and p not in in_heap:
                popped = heapq.heapreplace(heap, (float(s), p))
                in_heap.remove(popped[1])
                in_heap.add(p)
                changed = True
        return changed

    offer(scores, points)
    k = last_change = 0
    t, cool = 1.0, 1.0 / (n_iter + 1)
    while k < n_iter and k < last_change + early_stop:
        new_points = np.array([space.random_walk(int(p), rng) for p in points])
        new_scores = predict(new_points)
        accept = rng.random(len(points)) < np.exp(np.minimum((new_scores - scores) / (t + 1e-5), 1))
        points[accept] = new_points[accept]
        scores[accept] = new_scores[accept]
        if offer(new_scores, new_points):
            last_change = k
        k += 1
        t -= cool
    heap.sort(key=lambda item: -item[0])
    return [p for s, p in heap if s >= 0]


def run(space, budget, seed, options):
    rng = np.random.default_rng(seed)
    plan_size, loss_type = options["plan_size"], options["loss_type"]
    trials, trial_pt, visited, xs, ys = [], 0, set(), [], []
    best_speed, fits, chains = 0.0, 0, [None]
    trace = []
    while len(trace) < budget and len(visited) < len(space.valid):
        while trial_pt < len(trials) and trials[trial_pt] in visited:
            trial_pt += 1
        if trial_pt >= len(trials) - int(0.05 * plan_size):
            unvisited = [p for p in space.valid if p not in visited]
            index = int(unvisited[rng.integers(len(unvisited))])
        else:
            index = trials[trial_pt]
        visited.add(index)
        value = space.values[index]
        trace.append(value)
        speed = 0.0 if value is None else (1.0 / value if space.as_time else math.exp(-value))
        best_speed = max(best_speed, speed)
        xs.append(index)
        ys.append(speed)
        if len(xs) >= plan_size * (fits + 1) and best_speed > 1e-6:
            model = fit(space, xs, ys, plan_size, loss_type, rng)
            trials, trial_pt = find_maximums(space, model, plan_size, visited, chains, rng), 0
            fits += 1
    return trace


OPTIONS = dict(DEFAULTS)


@functools.lru_cache(maxsize=8)
def space_of(path):
    """The indexed space of a cachefile, built once per process (a space of a budget of 2 has thousands of
    runs); runs only read it."""
    return Space(*peer_runs.recorded(path))


def run_task(task):
    path, budget, seed = task
    return run(space_of(path), budget, seed, OPTIONS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peer_runs.add_arguments(parser)
    parser.add_argument("--options", default="{}",
                        help='JSON: plan_size (64), loss_type ("reg" or "rank")')
    args = parser.parse_args()
    options = peer_runs.options_object(args.options, "search_autotvm")
    if set(options) - set(DEFAULTS):
        sys.exit(f"search_autotvm: --options: unknown {', '.join(sorted(set(options) - set(DEFAULTS)))}; "
                 f"accepted: {', '.join(DEFAULTS)}")
    OPTIONS.update(options)
    if not isinstance(OPTIONS["plan_size"], int) or OPTIONS["plan_size"] < 1:
        sys.exit("search_autotvm: --options: plan_size must be a positive integer")
    if OPTIONS["loss_type"] not in ("reg", "rank"):
        sys.exit('search_autotvm: --options: loss_type must be "reg" or "rank"')
    peer_runs.run_all(args, "search_autotvm", run_task)


if __name__ == "__main__":
    main()
