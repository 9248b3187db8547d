"""The replay of a top-k-only suite that the test clients of tests/samplers and tests/campaign serve (standard
library only): top-k at the row's temperature, ties at the k-th logit kept, renormalized over the kept set, with the
label guard (a label outside the kept set is restored). Returns the logprobs and whether the guard fired."""
import math


def top_k_logprobs(row, p, label):
    z = [x / p.temperature for x in row]
    keep = set(range(len(z)))
    if 0 < p.top_k < len(z):
        kth = sorted(z, reverse=True)[p.top_k - 1]
        keep = {i for i, v in enumerate(z) if v >= kth}
    guarded = label >= 0 and label not in keep
    if guarded:
        keep.add(label)
    m = max(z[i] for i in keep)
    log_sum = m + math.log(math.fsum(math.exp(z[i] - m) for i in keep))
    return [z[i] - log_sum if i in keep else -math.inf for i in range(len(z))], guarded
