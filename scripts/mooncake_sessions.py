#!/usr/bin/env python3
# @brief The session structure of the Mooncake conversation trace, from its hash_ids chains: the figures the
# multi-turn workload (scenarios/workloads/multiturn_chat.yaml) is built from. Pure Python, no numpy.
#
# A request continues an earlier one when its 512-token prefix blocks extend that request's blocks past the prefix
# every request shares (block 0 in this trace); the earlier one is the latest request that held those blocks. The
# rule is the one sim/workload/trace_sessions.cpp applies (an independent implementation: the C++ test of CTest
# sim/workload checks the session count and the answers keyed that this script prints, 7,373 and 2,314, as its expected
# figures). Usage: scripts/mooncake_sessions.py [trace.jsonl]
import collections
import json
import math
import os
import statistics
import sys

BLOCK = 512  # the FAST25 traces' block (scenarios/data/workloads/README.md)


def quantiles(xs, ps):
    xs = sorted(xs)
    # nearest rank: the smallest value with at least p of the sample at or below it
    return [(p, xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))]) for p in ps]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "scenarios", "data", "workloads", "mooncake_conversation_trace.jsonl")
    reqs = [json.loads(line) for line in open(path) if line.strip()]
    # The trace is in time stamp order; ties keep file order (as the C++ reader's stable sort does).
    reqs = [r for _, r in sorted(enumerate(reqs), key=lambda ir: (ir[1]["timestamp"], ir[0]))]
    common = len(reqs[0]["hash_ids"])
    for r in reqs:
        h, c = r["hash_ids"], 0
        while c < min(common, len(h)) and h[c] == reqs[0]["hash_ids"][c]:
            c += 1
        common = c
    latest = {}  # block prefix -> index of the latest request that held it
    session, turn, parent, shared = [], [], [], []
    turns_of = []
    for i, r in enumerate(reqs):
        h = tuple(r["hash_ids"])
        k = len(h)
        while k > 0 and h[:k] not in latest:
            k -= 1
        p = latest.get(h[:k]) if k > common else None
        if p is None:
            session.append(len(turns_of))
            turns_of.append(0)
        else:
            session.append(session[p])
        turn.append(turns_of[session[-1]])
        turns_of[session[-1]] += 1
        parent.append(p)
        shared.append(k)
        for j in range(1, len(h) + 1):
            latest[h[:j]] = i
    n = len(reqs)
    print(f"requests {n}, blocks shared by every request {common}, sessions {len(turns_of)}")
    pmf = collections.Counter(turns_of)
    print("turns per session (value: sessions):", ", ".join(f"{t}: {c}" for t, c in sorted(pmf.items())))
    print(f"mean turns {statistics.mean(turns_of):.3f}")
    ps = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1]
    first = [reqs[i]["input_length"] - common * BLOCK for i in range(n) if turn[i] == 0]
    print("first-turn input minus the shared prefix, quantiles:", quantiles(first, ps))
    # A pure extension shares every whole block of its parent's prompt: prompt = parent prompt + parent output + new.
    ext = [i for i in range(n) if parent[i] is not None
           and shared[i] == reqs[parent[i]]["input_length"] // BLOCK]
    new = [reqs[i]["input_length"] - reqs[parent[i]]["input_length"] - reqs[parent[i]]["output_length"] for i in ext]
    print(f"pure extensions {len(ext)} of {sum(1 for p in parent if p is not None)} continuations; "
          f"new message <= 0 in {sum(1 for x in new if x <= 0)}")
    # Sharing the parent's partial last block too: the rule allows it only for the same prompt again.
    ext_set = set(ext)
    whole = [i for i in range(n) if parent[i] is not None and i not in ext_set
             and shared[i] == len(reqs[parent[i]]["hash_ids"])]
    same = sum(1 for i in whole if reqs[i]["input_length"] == reqs[parent[i]]["input_length"])
    print(f"continuations sharing the parent's partial last block too {len(whole)}, of which the same prompt length "
          f"{same}; the rest branch off earlier {sum(1 for p in parent if p is not None) - len(ext) - len(whole)}")
    # Answers keyed (sim/workload/trace_sessions.cpp, key_answer): the first continuation that resends a request's
    # whole blocks names its prompt + answer, when it reaches past the request's own blocks.
    keyed = set()
    for i in range(n):
        p = parent[i]
        if p is None or p in keyed or shared[i] < reqs[p]["input_length"] // BLOCK:
            continue
        seq = reqs[p]["input_length"] + reqs[p]["output_length"]
        if min(len(reqs[i]["hash_ids"]), -(-seq // BLOCK)) > len(reqs[p]["hash_ids"]):
            keyed.add(p)
    print(f"answers keyed by a later turn's blocks {len(keyed)}")
    print("new user message tokens (> 0), quantiles:", quantiles([x for x in new if x > 0], ps))
    print("output tokens (every request), quantiles:", quantiles([r["output_length"] for r in reqs], ps))
    gaps = [(reqs[i]["timestamp"] - reqs[parent[i]]["timestamp"]) / 1000 for i in range(n) if parent[i] is not None]
    logs = [math.log(g) for g in gaps if g > 0]
    mu, sigma = statistics.mean(logs), statistics.pstdev(logs)
    print(f"arrival gap between consecutive turns (s): n {len(gaps)}, zero {sum(1 for g in gaps if g <= 0)}, "
          f"mean {statistics.mean(gaps):.1f}, quantiles {quantiles(gaps, ps)}")
    print(f"log-normal fit of the positive gaps (moments of ln): median {math.exp(mu):.1f} s, sigma {sigma:.3f}")
    t_end = max(r["timestamp"] for r in reqs) / 1000
    print(f"sessions starting per second {len(turns_of) / t_end:.4f} (over {t_end:.0f} s)")


if __name__ == "__main__":
    main()
