MASKED_SCORE = -30000.0


class _Record(nl.NKIObject):
    """A step's or a query tile's state, handed from stage to stage."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class _StepPipeline(nl.NKIObject):
    """Emits attention steps software-pipelined, in the order autotune traced and measured: with a lookahead L
    the softmax half (scores_and_max, probabilities) of step j + L is emitted between the parts of step j's
    output half (transpose_probs, probs_times_v, accumulate), so the tensor engine computes later scores while
    the vector and scalar engines finish earlier softmaxes. L = 0 runs each step whole."""

    def __init__(self, lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate):
        self.lookahead = lookahead
        self.scores_and_max, self.probabilities = scores_and_max, probabilities
        self.transpose_probs, self.probs_times_v, self.accumulate = transpose_probs, probs_times_v, accumulate
        self.in_flight = []

    def issue(self, step):
        self.in_flight.append(step)
        if self.lookahead == 0:
            for stage in (self.scores_and_max, self.probabilities, self.transpose_probs, self.probs_times_v,
                          self.accumulate):
                stage(step)
            self.in_flight.pop(0)
            return
        if len(self.in_flight) <= self.lookahead:  # filling the pipeline
            self.scores_and_max(step)
            self.probabilities(step)
            return
        oldest = self.in_flight.pop(0)
        self.transpose_probs(oldest)
        self.scores_and_max(step)
        self.probs_times_v(oldest)
        self.probabilities(step)
        self.accumulate(oldest)

    def drain(self):
        while self.in_flight:
            oldest = self.in_flight.pop(0)
            self.transpose_probs(oldest)
            self.probs_times_v(oldest)
            self.accumulate(oldest)


def _causal_mask(dst, scores, q0, k0):
    """dst[p, c] = scores[p, c] where (q0 + p) - (k0 + c) >= 0, MASKED_SCORE elsewhere (GpSimd)."""
    nisa.affine_select(dst=dst, pattern=[[-1, scores.shape[1]]], channel_multiplier=1, on_true_tile=scores,
                       on_false_value=MASKED_SCORE, cmp_op=nl.greater_equal, offset=q0 - k0)
