"""Where a GPT training step goes, by kernel family, from a kernel timeline.

Usage: python3 bench/gpt_profile.py TRACE.json PEAK_GFLOPS BW_GBS [T]

TRACE.json: `lazytensor train --model gpt ... --trace-file TRACE.json` run
with LT_TRACE_KERNELS=1 (every kernel span carries its bytes and flops).
PEAK_GFLOPS: `build/bench_peak`'s fp32 FMA peak (wall), BW_GBS: `build/bench_cpu`'s
memcpy bandwidth, both measured in the same window. T: the block size, for
attention's flops (causal: the half of the (T, T) scores that count).

Prints one markdown row per family: ms per steady step (median over the
steps after the first, which compiles), its share, and the percentage of its
own limit: the FMA peak for matmuls and attention, the memory bandwidth for
the rest (the bytes each kernel reads and writes once).
"""
import json
import re
import statistics
import sys


def family(name, typ, flops, numel):
    if name in ("LINEAR", "MATMUL"):
        k = int(round(flops / (2 * numel))) if numel else 0
        return "%s %s K=%d" % (name.lower(), typ.split("[", 1)[1].rstrip("]").replace(", ", "x"), k), "fma"
    if name == "ATTENTION":
        return "attention forward", "fma"
    if name == "ATTENTION_BWD":
        return "attention backward", "fma"
    if name in ("LAYER_NORM", "LN_BWD_INPUT", "LN_BWD_PARAMS", "LN_STATS"):
        return "layer norm (forward, backward)", "bw"
    if name in ("GELU", "GELU_BWD"):
        return "GELU (forward, backward; fused groups)", "bw"
    if name.startswith("CROSS_ENTROPY") or "SOFTMAX" in name:
        return "cross entropy (forward, backward)", "bw"
    if name in ("ADDCDIV", "GRAD_NORM", "CLAMP", "LERP", "MUL_"):
        return "AdamW, gradient clipping", "bw"
    if name.startswith("AS_STRIDED") or name in ("PERMUTE", "TRANSPOSE", "CONTIGUOUS", "COPY", "CAT", "SLICE_SCATTER"):
        return "copies, layout changes (%s)" % name, "bw"
    if name in ("EMBEDDING", "INDEX_ADD", "FILL"):
        return "embeddings (forward, backward)", "bw"
    if name == "SUM":
        return "bias gradients (sums over rows)", "bw"
    return "other elementwise (%s)" % name, "bw"


def main():
    path, peak, bw = sys.argv[1], float(sys.argv[2]) * 1e9, float(sys.argv[3]) * 1e9
    T = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    ev = json.load(open(path))["traceEvents"]
    runs = [e for e in ev if e.get("name") == "execute"]
    steps = []
    for r in runs:
        t0, t1 = r["ts"], r["ts"] + r["dur"]
        ks = [e for e in ev if e.get("ph") == "X" and "bytes" in e.get("args", {}) and t0 <= e["ts"] <= t1]
        if any(e["name"] == "ADDCDIV" for e in ks):  # a training step (the optimizer ran)
            steps.append((r["dur"] / 1e3, ks))
    steps = steps[1:]  # the first compiles and touches new memory
    if not steps:
        sys.exit("no steady training step in the trace")
    fams = {}
    for i, (_, ks) in enumerate(steps):
        for e in ks:
            a = e["args"]
            m = re.search(r"\[(.*)\]", a["type"])
            shape = [int(x) for x in m.group(1).split(",") if x.strip()] if m else []
            numel = 1
            for x in shape:
                numel *= x
            fl = a["flops"]
            if e["name"] in ("ATTENTION", "ATTENTION_BWD"):
                bh_t_d = numel if e["name"] == "ATTENTION" else numel // 3
                fl = (2.0 if e["name"] == "ATTENTION" else 5.0) * bh_t_d * T  # 2 (fwd) / 5 (bwd) causal matmuls
            f, lim = family(e["name"], a["type"], fl, numel)
            d = fams.setdefault(f, {"lim": lim, "ms": [0.0] * len(steps), "work": [0.0] * len(steps), "n": 0})
            d["ms"][i] += e["dur"] / 1e3
            d["work"][i] += fl if lim == "fma" else a["bytes"]
            d["n"] += 1
    step_ms = statistics.median(s for s, _ in steps)
    rows = []
    for f, d in fams.items():
        ms = statistics.median(d["ms"])
        work = statistics.median(d["work"])
        limit_ms = work / (peak if d["lim"] == "fma" else bw) * 1e3
        rows.append((ms, f, d, limit_ms))
    rows.sort(reverse=True)
    print("step (median of %d steady steps): %.0f ms; kernels: %.0f ms" % (len(steps), step_ms, sum(r[0] for r in rows)))
    print("| kernel family | kernels per step | ms per step | share of the step | limit | ms at the limit | % of the limit |")
    print("|---|---|---|---|---|---|---|")
    for ms, f, d, limit_ms in rows:
        print("| %s | %d | %.1f | %.1f%% | %s | %.1f | %.0f%% |" % (
            f, d["n"] // len(steps), ms, 100 * ms / step_ms,
            "FMA peak" if d["lim"] == "fma" else "bandwidth", limit_ms, 100 * limit_ms / ms if ms else 0))


if __name__ == "__main__":
    main()
