#!/bin/sh
# Every benchmark of docs/benchmarks.md with its PyTorch counterpart, in one
# run on one machine, printed as that page's tables: updating the page is
# running this and pasting its output over the old tables.
#
#   sh bench/run_all.sh                 every section (about an hour on 2 cores)
#   sh bench/run_all.sh trace gpt       some sections
#   QUICK=1 sh bench/run_all.sh         small sizes and few steps: checks that
#                                       everything runs, the numbers mean nothing
#
# Sections: machine trace python step-trace execution resnet50 bf16 busy gpt
# data dist touch torch other. ROUNDS=N (default 3) is how many times a section
# alternates its runs; cells are "median (min-max)" over the rounds. NT
# threads (default 2). BUILD=DIR (default build) is the built tree. PyTorch is
# Debian's, under /usr/bin/python3 (scripts/install-deps.sh; PYTHON=... for
# another interpreter, except in the bench/compare_*.sh this calls). A
# section whose counterpart is missing (PyTorch, libtorch-dev, torchvision,
# MPI, the Fashion-MNIST files) says what it skipped and why, and the run
# goes on.
# Exits non-zero when a benchmark failed. Run it on a quiet machine: other
# processes on the cores change every number.
here=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-build}
case $B in /*) ;; *) B=$here/$B ;; esac
NT=${NT:-2}
ROUNDS=${ROUNDS:-3}
QUICK=${QUICK:-0}
PY=${PYTHON:-/usr/bin/python3}
[ "$QUICK" = 1 ] && ROUNDS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
sec=
skipped=
failed=

skip() { echo "(skipped: $*)"; skipped="$skipped
- $sec: $*"; }
failed() { echo "(failed: $*; its output is above)"; failed="$failed $sec"; }
# "median (min-max)" of the numbers on stdin (one per line) in format $1; one number alone; "-" for none.
stats() {
    sort -g | awk -v f="${1:-%.1f}" '{ v[NR] = $1 } END {
        if (!NR) { printf "-"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        if (NR == 1 || v[1] == v[NR]) printf f, m; else printf f " (" f "-" f ")", m, v[1], v[NR] }'
}
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# a / b in format f (default %.2f), "-" when either is missing
div() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) printf "-"; else printf f, a / b }'; }
# A field of a --report json line: jfield FILE NAME
jfield() { sed -n "s/.*\"$2\": \\([-0-9.e+]*\\).*/\\1/p" "$1" | head -1; }
have_torch() { $PY -c 'import torch' 2>/dev/null; }
have_tv() { $PY -c 'import torch, torchvision' 2>/dev/null; }
have_fmnist() { [ -d /usr/share/datasets/fashion-mnist ]; } # Debian's dataset-fashion-mnist
need() { # need FILE...: every file exists in the build
    for f; do [ -e "$B/$f" ] || { skip "$B/$f is missing (make build)"; return 1; }; done
}
rounds() { seq "$ROUNDS"; }
nrounds() { [ "$ROUNDS" = 1 ] && echo "1 round" || echo "$ROUNDS rounds"; }
# Step times (ms) of a lazytensor train --trace-file: the "step" spans after the first (start-up).
steps_of() {
    python3 - "$1" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for e in [e for e in ev if e.get("name") == "step" and e.get("ph") == "X"][1:]:
    print("%.1f" % (e["dur"] / 1e3))
PY
}
# stdin from its line $1 on (1-based): the steady steps
from_line() { tail -n "+$1"; }
lt_env() { env LT_NUM_THREADS="$NT" OMP_NUM_THREADS="$NT" "$@"; }

sec_machine() {
    echo "### The machine"
    echo
    need bench_peak bench_peak_bf16 || return
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    isa=baseline
    case " $flags " in *" avx2 "*) isa=AVX2 ;; esac
    case " $flags " in *" avx512f "*) isa=AVX-512 ;; esac
    case " $flags " in *" avx512_bf16 "*) isa="AVX-512 with BF16" ;; esac
    lt_env "$B/bench_peak" > "$tmp/peak" || { failed bench_peak; cat "$tmp/peak"; return; }
    PEAK=$(sed -n 's/.*: \([0-9.]*\) GFLOP\/s wall.*/\1/p' "$tmp/peak" | sort -g | tail -1)
    lt_env "$B/bench_peak_bf16" > "$tmp/peak16" || { failed bench_peak_bf16; cat "$tmp/peak16"; return; }
    bf=$(sed -n 's/^bf16 dot peak.*: *\([0-9.]*\) GFLOP.*/\1/p' "$tmp/peak16")
    tv=$($PY -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "not installed")
    echo "| | |"
    echo "|---|---|"
    echo "| CPU | $cpu, $(nproc) cores, $isa |"
    echo "| float32 FMA peak, $NT threads (\`build/bench_peak\`) | $PEAK GFLOP/s |"
    echo "| bfloat16 dot peak, $NT threads (\`build/bench_peak_bf16\`) | ${bf:--} GFLOP/s |"
    echo "| PyTorch under /usr/bin/python3 | $tv |"
}

peak() { # the float32 peak (GFLOP/s wall, NT threads), measured once per run
    if [ -z "${PEAK:-}" ]; then
        PEAK=$(lt_env "$B/bench_peak" | sed -n 's/.*: \([0-9.]*\) GFLOP\/s wall.*/\1/p' | sort -g | tail -1)
    fi
    echo "$PEAK"
}

sec_trace() {
    echo "### Tracing cost"
    echo
    need bench_trace || return
    if [ "$QUICK" = 1 ]; then "$B/bench_trace" q; else "$B/bench_trace"; fi > "$tmp/trace" || { cat "$tmp/trace"; failed bench_trace; return; }
    n=$(sed -n 's/.*median of \([0-9]*\).*/\1/p' "$tmp/trace" | head -1)
    echo "| lazytensor, ns per op (one thread, median of $n) | chain of 10 | 1,000 | 100,000 |"
    echo "|---|---|---|---|"
    awk '/^lt_/ { c = NF; printf "| `"; for (i = 1; i <= c - 3; i++) printf "%s%s", $i, (i < c - 3 ? " " : ""); printf "` | %s | %s | %s |\n", $(c - 2), $(c - 1), $c }' "$tmp/trace"
    echo
    inc=/usr/include/torch/csrc/api/include
    if ! command -v g++ >/dev/null || [ ! -d "$inc" ]; then skip "PyTorch's C++ side: libtorch-dev or g++ is missing (scripts/install-deps.sh)"; return; fi
    out=${TMPDIR:-/tmp}/lt-bench-pytorch
    mkdir -p "$out"
    for p in lerp_cpp view_cpp; do
        if [ ! -x "$out/$p" ] || [ "$here/bench/pytorch/$p.cpp" -nt "$out/$p" ]; then
            echo "(building $p against libtorch: a minute or two)" >&2
            g++ -O2 -std=c++17 "$here/bench/pytorch/$p.cpp" -o "$out/$p" -I$inc -ltorch -ltorch_cpu -lc10 >&2 || { failed "building $p"; return; }
        fi
    done
    : > "$tmp/e1"; : > "$tmp/e2"; : > "$tmp/l1"; : > "$tmp/l2"; : > "$tmp/v50"; : > "$tmp/v400"
    for r in $(rounds); do
        "$out/lerp_cpp" > "$tmp/lerp" || { cat "$tmp/lerp"; failed lerp_cpp; return; }
        M=50 "$out/view_cpp" > "$tmp/view50" && M=400 "$out/view_cpp" > "$tmp/view400" || { failed view_cpp; return; }
        awk '/^eager-cpu lerp out/ { print $(NF - 4) * 1000 }' "$tmp/lerp" >> "$tmp/e1"
        awk '/^eager-cpu lerp_ in/ { print $(NF - 4) * 1000 }' "$tmp/lerp" >> "$tmp/e2"
        awk '/^ltc-ts lerp out/ { print $(NF - 4) * 1000 }' "$tmp/lerp" >> "$tmp/l1"
        awk '/^ltc-ts lerp_ in/ { print $(NF - 4) * 1000 }' "$tmp/lerp" >> "$tmp/l2"
        awk '/^ltc-ts view/ { print $(NF - 4) / 1000 }' "$tmp/view50" >> "$tmp/v50"
        awk '/^ltc-ts view/ { print $(NF - 4) / 1000 }' "$tmp/view400" >> "$tmp/v400"
    done
    echo "| PyTorch $($PY -c 'import torch; print(torch.__version__[:4])' 2>/dev/null), one thread (\`bench/pytorch/lerp_cpp.cpp\`, \`view_cpp.cpp\`), $(nrounds) | per op |"
    echo "|---|---|"
    echo "| eager \`lerp(a, b, 0.5)\`, 2x3 (dispatch + compute) | $(stats %.0f < "$tmp/e1") ns |"
    echo "| eager \`x.lerp_(g, 0.1)\` | $(stats %.0f < "$tmp/e2") ns |"
    echo "| lazy tensor core, trace \`lerp\` | $(stats %.0f < "$tmp/l1") ns |"
    echo "| lazy tensor core, trace \`lerp_\` | $(stats %.0f < "$tmp/l2") ns |"
    echo "| lazy tensor core, \`x[0:32].lerp_\`, chain of 50 / 400 | $(stats %.1f < "$tmp/v50") / $(stats %.1f < "$tmp/v400") ms |"
}

sec_python() {
    echo "### Tracing from Python"
    echo
    need python/lazytensor lazytensor || return
    have_torch || { skip "PyTorch is missing under $PY (scripts/install-deps.sh)"; return; }
    if [ "$QUICK" = 1 ]; then set -- 500 5; else set -- 5000 25; fi
    PYTHONPATH=$B/python $PY "$here/bench/python_ops.py" "$@" > "$tmp/ops" || { cat "$tmp/ops"; failed python_ops.py; return; }
    sed -n '1p' "$tmp/ops"; echo; sed -n '2,$p' "$tmp/ops" | sed '/^lazytensor, through/{x;p;x}'
    echo
    if [ "$QUICK" = 1 ]; then set -- resnet50 2 32 4; else set -- resnet50 8 64 40; fi
    : > "$tmp/pt"; : > "$tmp/ct"; : > "$tmp/ci"; : > "$tmp/pr"
    for r in $(rounds); do
        LT_NUM_THREADS=$NT LT_CLI=$B/lazytensor PYTHONPATH=$B/python $PY "$here/bench/python_step.py" "$@" > "$tmp/step" ||
            { cat "$tmp/step"; failed python_step.py; return; }
        sed -n 's/.*median after 2 steps: \([0-9.]*\)).*/\1/p' "$tmp/step" >> "$tmp/pt"
        awk -F'|' '/C models/ { print $3 + 0 }' "$tmp/step" >> "$tmp/ct"
        awk -F'|' '/C models/ { print $5 + 0 }' "$tmp/step" >> "$tmp/ci"
        sed -n 's/^Python \/ C img\/s without compiles: \([0-9.]*\).*/\1/p' "$tmp/step" >> "$tmp/pr"
    done
    echo "| ResNet-50 training step, batch $2, ${3}x$3, AdamW, $NT threads (\`bench/python_step.py $*\`), $(nrounds) | |"
    echo "|---|---|"
    echo "| trace, from Python (\`lazytensor.models\`; median of each run's steps after the first 2) | $(stats %.2f < "$tmp/pt") ms |"
    echo "| trace, from C (\`lazytensor train\`; mean of each run's steps) | $(stats %.2f < "$tmp/ct") ms |"
    echo "| img/s from C, compiles left out | $(stats %.1f < "$tmp/ci") |"
    echo "| img/s from Python / from C | $(stats %.3f < "$tmp/pr") |"
}

sec_step_trace() {
    echo "### Tracing a training step"
    echo
    need bench_trace_step || return
    reps=7; [ "$QUICK" = 1 ] && reps=2
    have_torch || skip "the PyTorch column: PyTorch is missing under $PY"
    echo "| model (1000 classes, 64x64; forward, loss, backward, AdamW) | ops traced | lazytensor trace (median of $reps; $(nrounds)) | PyTorch lazy tensor core trace | lazytensor's advantage |"
    echo "|---|---|---|---|---|"
    for m in resnet50:2 resnet18:8; do
        model=${m%:*} batch=${m#*:}
        ok=1
        for r in $(rounds); do "$B/bench_trace_step" "$model" "$reps" || ok=0; done > "$tmp/ts" 2>&1
        [ $ok = 1 ] || { cat "$tmp/ts"; failed bench_trace_step; return; }
        ops=$(awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "ops") { print $i; exit } }' "$tmp/ts")
        ours=$(sed -n 's/.*trace \([0-9.]*\) ms.*/\1/p' "$tmp/ts" | stats %.2f)
        theirs=
        if have_torch; then
            STEPS=$([ "$QUICK" = 1 ] && echo 3 || echo 6) NT=$NT $PY "$here/bench/pytorch/train_bench.py" "$model" "$batch" 64 lazy > "$tmp/ltc" 2>&1 ||
                { cat "$tmp/ltc"; failed "train_bench.py $model lazy"; return; }
            theirs=$(sed -n 's/.*trace(py->mark_step) \([0-9.]*\) ms.*/\1/p' "$tmp/ltc")
        fi
        echo "| $model | $ops | $ours ms | ${theirs:--} ms | $(div "$theirs" "$(sed -n 's/.*trace \([0-9.]*\) ms.*/\1/p' "$tmp/ts" | med)" %.0f)x less time |"
    done
}

sec_execution() {
    echo "### Execution against PyTorch eager"
    echo
    need lazytensor bench_conv bench_cpu bench_step_memory || return
    have_tv || { skip "PyTorch or torchvision is missing under $PY (scripts/install-deps.sh)"; return; }
    export NT
    for f in epoch_t epoch_o acc_t acc_o r18_t r18_o r50_t r50_o mem_t mem_o memp; do : > "$tmp/$f"; done
    epoch=1
    if [ "$QUICK" = 1 ]; then skip "the one-epoch row (QUICK: a full epoch on each side)"; epoch=0
    elif ! have_fmnist; then skip "the one-epoch row: the Fashion-MNIST files are missing (scripts/install-deps.sh)"; epoch=0; fi
    for r in $(rounds); do
        if [ $epoch = 1 ]; then
            $PY "$here/bench/pytorch_fmnist.py" 0.003 cosine > "$tmp/pf" 2>&1 || { cat "$tmp/pf"; failed pytorch_fmnist.py; return; }
            sed -n 's/.*(\([0-9.]*\) img\/s).*/\1/p' "$tmp/pf" | tail -1 >> "$tmp/epoch_t"
            sed -n 's/.*test acc \([0-9.]*\)%.*/\1/p' "$tmp/pf" | tail -1 >> "$tmp/acc_t"
            lt_env "$B/lazytensor" train --report json > "$tmp/lf" 2> "$tmp/lf.err" || { cat "$tmp/lf.err"; failed "lazytensor train"; return; }
            jfield "$tmp/lf" images_per_sec >> "$tmp/epoch_o"
            jfield "$tmp/lf" test_accuracy >> "$tmp/acc_o"
        fi
        for w in resnet18:8:r18 resnet50:2:r50; do
            model=${w%%:*} rest=${w#*:} batch=${rest%:*} k=${w##*:}
            STEPS=6 $PY "$here/bench/pytorch/train_bench.py" "$model" "$batch" 64 eager > "$tmp/pe" 2>&1 || { cat "$tmp/pe"; failed "train_bench.py $model"; return; }
            sed -n 's/.*step total \([0-9.]*\) ms.*/\1/p' "$tmp/pe" >> "$tmp/${k}_t"
            lt_env "$B/bench_conv" "$model" "$batch" 64 6 cpu > "$tmp/le" 2>&1 || { cat "$tmp/le"; failed "bench_conv $model"; return; }
            sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/le" | head -1 >> "$tmp/${k}_o"
        done
        $PY "$here/bench/pytorch_step_memory.py" > "$tmp/pm" 2>&1 || { cat "$tmp/pm"; failed pytorch_step_memory.py; return; }
        sed -n 's/.*over 5 steps \([0-9.]*\) MiB.*/\1/p' "$tmp/pm" >> "$tmp/mem_t"
        lt_env "$B/bench_step_memory" > "$tmp/lm" 2>&1 || { cat "$tmp/lm"; failed bench_step_memory; return; }
        sed -n 's/.*over 5 steps \([0-9.]*\) MiB.*/\1/p' "$tmp/lm" >> "$tmp/mem_o"
        sed -n 's/.*PeakBytes \([0-9.]*\) MiB.*/\1/p' "$tmp/lm" >> "$tmp/memp"
    done
    lt_env "$B/bench_cpu" $([ "$QUICK" = 1 ] && echo 3 || echo 10) > "$tmp/bc" 2>&1 || { cat "$tmp/bc"; failed bench_cpu; return; }
    # per-round speed-ups: PyTorch's time over ours (img/s: ours over PyTorch's)
    sp() { paste "$tmp/$1" "$tmp/$2" | awk -v inv="${3:-0}" '$1 > 0 && $2 > 0 { print inv ? $2 / $1 : $1 / $2 }' | stats %.2f; }
    echo "| workload, $NT threads both sides, $(nrounds) | PyTorch eager | lazytensor | lazytensor against PyTorch |"
    echo "|---|---|---|---|"
    if [ -s "$tmp/epoch_o" ]; then
        echo "| ResNet-20 on Fashion-MNIST, one epoch, batch 128, AdamW lr 3e-3 cosine | $(stats %.0f < "$tmp/epoch_t") img/s, test accuracy $(stats %.2f < "$tmp/acc_t")% | $(stats %.0f < "$tmp/epoch_o") img/s, test accuracy $(stats %.2f < "$tmp/acc_o")% | $(sp epoch_t epoch_o 1)x the img/s |"
    fi
    echo "| ResNet-18 step, batch 8, 64x64, AdamW | $(stats %.1f < "$tmp/r18_t") ms | $(stats %.1f < "$tmp/r18_o") ms | $(sp r18_t r18_o)x faster |"
    echo "| ResNet-50 step, batch 2, 64x64, AdamW | $(stats %.1f < "$tmp/r50_t") ms | $(stats %.1f < "$tmp/r50_o") ms | $(sp r50_t r50_o)x faster |"
    echo "| ResNet-20 step, batch 128: peak RSS growth over 5 steps | $(stats %.1f < "$tmp/mem_t") MiB | $(stats %.1f < "$tmp/mem_o") MiB (\`PeakBytes\` $(stats %.1f < "$tmp/memp") MiB) | $(paste "$tmp/mem_o" "$tmp/mem_t" | awk '$2 > 0 { print $1 / $2 }' | stats %.2f)x the memory |"
    echo
    echo "| lazytensor alone (\`build/bench_cpu\`), against the bytes it must move over the copy bandwidth | time | the floor |"
    echo "|---|---|---|"
    awk '/^AdamW step/ { for (i = 1; i <= NF; i++) { if ($i == "ms" && !t) t = $(i - 1); if ($i == "floor") f = $(i + 1) }
         printf "| AdamW update, 11M float32 parameters | %s ms | %s ms (%.2fx) |\n", t, f, t / f }' "$tmp/bc"
    awk '/^fused elementwise/ { for (i = 1; i <= NF; i++) if ($i == "ms") t = $(i - 1); x = $0; sub(/.*\(/, "", x); sub(/x the floor.*/, "", x)
         name = /sigmoid/ ? "with a sigmoid" : "float arithmetic"
         printf "| a fused group, 3 reads 1 write, %s | %s ms | %.2fx |\n", name, t, x }' "$tmp/bc"
}

sec_resnet50() {
    echo "### ResNet-50 float32 against the machine's peak"
    echo
    need lazytensor bench_peak bench_pool || return
    if [ "$QUICK" = 1 ]; then batch=2 size=64 steps=3; else batch=32 size=224 steps=5; fi
    run="train --data fake --model resnet50 --image-size $size --batch-size $batch --steps $steps --test-size 0 --report json"
    p=$(peak)
    : > "$tmp/st"; : > "$tmp/st0"; : > "$tmp/first"; : > "$tmp/fl"; : > "$tmp/pb"
    for r in $(rounds); do
        for w in 1 0; do
            LT_CONV_WINOGRAD=$w LT_METRICS=1 lt_env "$B/lazytensor" $run --trace-file "$tmp/r50.json" > "$tmp/r50" 2> "$tmp/r50.err" ||
                { cat "$tmp/r50.err"; failed "lazytensor train resnet50"; return; }
            steps_of "$tmp/r50.json" > "$tmp/steps"
            s=$(from_line 3 < "$tmp/steps" | med)
            if [ $w = 1 ]; then
                echo "$s" >> "$tmp/st"
                div "$(head -1 "$tmp/steps")" "$s" >> "$tmp/first"; echo >> "$tmp/first"
                awk -v n="$steps" '$1 == "ExecutedFlops" { print $2 / n / 1e9 }' "$tmp/r50.err" >> "$tmp/fl"
                awk -v b="$(jfield "$tmp/r50" peak_bytes)" 'BEGIN { print b / 1e6 }' >> "$tmp/pb"
            else
                echo "$s" >> "$tmp/st0"
            fi
        done
    done
    gf=$(med < "$tmp/fl")
    st=$(med < "$tmp/st")
    echo "| ResNet-50, batch $batch, ${size}x$size, AdamW, $NT threads, $(nrounds) | |"
    echo "|---|---|"
    echo "| float32 peak (\`build/bench_peak\`) | $p GFLOP/s |"
    echo "| FLOPs of a step (\`ExecutedFlops\`) | $(printf %.1f "$gf") GFLOP |"
    echo "| steady step (median of steps 3-$steps) | $(stats %.0f < "$tmp/st") ms = $(div "$gf" "$(awk -v s="$st" 'BEGIN { print s / 1e3 }')" %.0f) GFLOP/s = $(awk -v g="$gf" -v s="$st" -v p="$p" 'BEGIN { printf "%.0f", 100 * g / (s / 1e3) / p }')% of the peak |"
    echo "| the same, every convolution direct (\`LT_CONV_WINOGRAD=0\`) | $(stats %.0f < "$tmp/st0") ms |"
    echo "| first step / steady step | $(stats %.2f < "$tmp/first")x |"
    echo "| peak memory (\`peak_bytes\`) | $(stats %.0f < "$tmp/pb") MB |"
    # the batch-norm family of a steady step, from a kernel timeline
    LT_TRACE_KERNELS=1 lt_env "$B/lazytensor" $run --trace-file "$tmp/k.json" > /dev/null 2> "$tmp/k.err" || { cat "$tmp/k.err"; failed "kernel timeline"; return; }
    python3 - "$tmp/k.json" > "$tmp/bn" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
fam = lambda n: n.startswith("BN_") or n in ("RELU", "WHERE")
for r in [e for e in ev if e.get("name") == "execute"][2:]:  # steady steps
    t0, t1 = r["ts"], r["ts"] + r["dur"]
    ks = [e for e in ev if e.get("ph") == "X" and e.get("name") not in ("execute", "step", "sync") and t0 <= e["ts"] <= t1]
    print("%.1f" % (sum(e["dur"] for e in ks if fam(e["name"])) / 1e3))
PY
    echo "| batch norm and the ReLU / add it fuses, per steady step (\`LT_TRACE_KERNELS=1\`) | $(stats %.0f < "$tmp/bn") ms |"
    lt_env "$B/bench_pool" "$batch" $([ "$QUICK" = 1 ] && echo 2 || echo 5) > "$tmp/pool" || { cat "$tmp/pool"; failed bench_pool; return; }
    f=$(awk '/^max pool forward/ { for (i = 1; i <= NF; i++) if ($i == "blocked") print $(i + 1) }' "$tmp/pool")
    b=$(awk '/^max pool backward/ { for (i = 1; i <= NF; i++) if ($i == "blocked") print $(i + 1) }' "$tmp/pool")
    echo "| the stem's max pool, forward / backward (\`build/bench_pool $batch\`) | $f / $b ms |"
}

sec_bf16() {
    echo "### bfloat16 mixed precision"
    echo
    need lazytensor bench_peak_bf16 || return
    if [ "$QUICK" = 1 ]; then batch=2 size=64 steps=3 tsteps=4 r20=6; else batch=32 size=224 steps=6 tsteps=12 r20=30; fi
    run="train --data fake --model resnet50 --image-size $size --batch-size $batch --steps $steps --test-size 0 --report json"
    : > "$tmp/b16"; : > "$tmp/f32"; : > "$tmp/pt"; : > "$tmp/pb16"; : > "$tmp/pf32"; : > "$tmp/i16"; : > "$tmp/i32"
    have_torch || skip "the PyTorch autocast column: PyTorch is missing under $PY"
    data=fashion-mnist; have_fmnist || data=fake
    for r in $(rounds); do
        for p in bf16 fp32; do
            lt_env "$B/lazytensor" $run --precision $p --trace-file "$tmp/p.json" > "$tmp/p" 2> "$tmp/p.err" || { cat "$tmp/p.err"; failed "lazytensor train --precision $p"; return; }
            steps_of "$tmp/p.json" | from_line 3 | med >> "$tmp/$([ $p = bf16 ] && echo b16 || echo f32)"
            awk -v b="$(jfield "$tmp/p" peak_bytes)" 'BEGIN { print b / 1e6 }' >> "$tmp/p$([ $p = bf16 ] && echo b16 || echo f32)"
            lt_env "$B/lazytensor" train --data $data --batch-size 128 --steps $r20 --test-size 0 --precision $p --report json > "$tmp/q" 2> "$tmp/q.err" ||
                { cat "$tmp/q.err"; failed "lazytensor train resnet20 --precision $p"; return; }
            jfield "$tmp/q" images_per_sec >> "$tmp/i$([ $p = bf16 ] && echo 16 || echo 32)"
        done
        if have_torch; then
            STEPS=$tsteps NT=$NT $PY "$here/bench/pytorch/train_bench.py" resnet50 "$batch" "$size" eager bf16 > "$tmp/pt.out" 2>&1 ||
                { cat "$tmp/pt.out"; failed "train_bench.py bf16"; return; }
            # its settled steps: the second half
            awk '/^step_ms/ { n = NF - 1; for (i = int(n / 2) + 1; i <= NF; i++) print $i }' "$tmp/pt.out" | med >> "$tmp/pt"
        fi
    done
    b=$(med < "$tmp/b16") f=$(med < "$tmp/f32") t=$(med < "$tmp/pt")
    echo "| ResNet-50, batch $batch, ${size}x$size, AdamW, $NT threads, $(nrounds) | step | bf16 against it |"
    echo "|---|---|---|"
    echo "| lazytensor bf16 (\`--precision bf16\`, median of steps 3-$steps) | $(stats %.0f < "$tmp/b16") ms | |"
    echo "| lazytensor float32 | $(stats %.0f < "$tmp/f32") ms | $(div "$f" "$b")x faster |"
    echo "| PyTorch eager, \`torch.autocast\` bf16 (median of steps $((tsteps / 2))-$tsteps) | $(stats %.0f < "$tmp/pt") ms | $(div "$t" "$b")x faster |"
    echo "| peak memory (\`peak_bytes\`), bf16 / float32 | $(stats %.0f < "$tmp/pb16") / $(stats %.0f < "$tmp/pf32") MB | $(div "$(med < "$tmp/pb16")" "$(med < "$tmp/pf32")")x the memory |"
    echo "| ResNet-20 on $data, batch 128, $r20 steps: img/s bf16 / float32 | $(stats %.0f < "$tmp/i16") / $(stats %.0f < "$tmp/i32") | $(div "$(med < "$tmp/i16")" "$(med < "$tmp/i32")")x the img/s |"
}

sec_busy() {
    echo "### A busy core"
    echo
    need lazytensor || return
    have_tv || { skip "PyTorch is missing under $PY"; return; }
    command -v taskset >/dev/null || { skip "taskset is missing (util-linux)"; return; }
    [ "$(nproc)" -ge 2 ] || { skip "needs 2 cores or more"; return; }
    echo "| model, batch 32, 2 threads: step ms without / with a busy loop on core 1 | lazytensor | factor | PyTorch eager | factor |"
    echo "|---|---|---|---|---|"
    for m in resnet20 resnet50; do
        if [ "$QUICK" = 1 ]; then set -- ROUNDS=1 STEPS=4; [ $m = resnet50 ] && set -- "$@" SIZE=64; else set -- ROUNDS=$([ $m = resnet50 ] && echo 1 || echo "$ROUNDS"); fi
        env "$@" MODEL=$m sh "$here/bench/compare_busy.sh" > "$tmp/busy" 2>&1 || { cat "$tmp/busy"; failed "compare_busy.sh $m"; return; }
        # "round R lazytensor: quiet Q ms, busy B ms, factor F", the same for PyTorch, then
        # "median factor (busy / quiet): lazytensor F1, PyTorch F2"
        awk -v m=$m '
            function f(v) { return v >= 100 ? sprintf("%.0f", v) : sprintf("%.1f", v) }
            /^== / { size = $5; sub(/,$/, "", size) }
            / lazytensor: quiet/ { lq = lq sep1 f($5); lb = lb sep1 f($8); sep1 = ", " }
            / PyTorch: *quiet/ { tq = tq sep2 f($5); tb = tb sep2 f($8); sep2 = ", " }
            /^median factor/ { f1 = $7; sub(/,$/, "", f1)
                printf "| %s, %s | %s -> %s ms | %sx | %s -> %s ms | %sx |\n", m, size, lq, lb, f1, tq, tb, $9 }' "$tmp/busy"
    done
}

sec_gpt() {
    echo "### Transformers (GPT)"
    echo
    need bench_gpt || return
    have_torch || { skip "PyTorch is missing under $PY"; return; }
    if [ "$QUICK" = 1 ]; then set -- 1 2 64; big="1 1 256"; huge="1 1 512"; else set -- 3 16 256; big="1 4 1024"; huge="1 2 2048"; fi
    reps=$1 batch=$2 block=$3
    : > "$tmp/gt"; : > "$tmp/go"; : > "$tmp/gr"; : > "$tmp/gtr"
    for r in $(rounds); do
        NT=$NT $PY "$here/bench/pytorch_gpt.py" step "$@" > "$tmp/pg" 2>&1 || { cat "$tmp/pg"; failed pytorch_gpt.py; return; }
        sleep 5
        lt_env "$B/bench_gpt" step "$@" > "$tmp/lg" 2>&1 || { cat "$tmp/lg"; failed bench_gpt; return; }
        t=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/pg") o=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/lg")
        echo "$t" >> "$tmp/gt"; echo "$o" >> "$tmp/go"; div "$t" "$o" >> "$tmp/gr"; echo >> "$tmp/gr"
        sed -n 's/.*trace \([0-9.]*\) ms.*/\1/p' "$tmp/lg" >> "$tmp/gtr"
        sleep 5
    done
    NT=$NT $PY "$here/bench/pytorch_gpt.py" step $big > "$tmp/pb" 2>&1 || { cat "$tmp/pb"; failed pytorch_gpt.py; return; }
    lt_env "$B/bench_gpt" step $big > "$tmp/lb" 2>&1 || { cat "$tmp/lb"; failed bench_gpt; return; }
    NT=$NT $PY "$here/bench/pytorch_gpt.py" step $huge > "$tmp/ph" 2>&1 || { cat "$tmp/ph"; failed pytorch_gpt.py; return; }
    lt_env "$B/bench_gpt" step $huge > "$tmp/lh" 2>&1 || { cat "$tmp/lh"; failed bench_gpt; return; }
    lt_env "$B/bench_gpt" attn > "$tmp/la" 2>&1 || { cat "$tmp/la"; failed "bench_gpt attn"; return; }
    : > "$tmp/pa"
    for T in 256 512 1024; do $PY "$here/bench/pytorch_gpt.py" attn $T >> "$tmp/pa" 2>&1 || { cat "$tmp/pa"; failed "pytorch_gpt.py attn"; return; }; done
    set -- $big
    bt=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/pb") bo=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/lb")
    ht=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/ph") ho=$(sed -n 's/.*: step \([0-9.]*\) ms.*/\1/p' "$tmp/lh")
    hmt=$(sed -n 's/.*peak RSS growth \([0-9.]*\) MiB.*/\1/p' "$tmp/ph") hmo=$(sed -n 's/.*peak RSS growth \([0-9.]*\) MiB.*/\1/p' "$tmp/lh")
    mt=$(sed -n 's/.*peak RSS growth \([0-9.]*\) MiB.*/\1/p' "$tmp/pb") mo=$(sed -n 's/.*peak RSS growth \([0-9.]*\) MiB.*/\1/p' "$tmp/lb")
    at=$(sed -n 's/.*peak RSS growth \([0-9.]*\) MiB.*/\1/p' "$tmp/pa" | paste -sd/ | sed 's,/, / ,g')
    ao=$(sed -n 's/.*: peak \([0-9.]*\) MiB.*/\1/p' "$tmp/la" | paste -sd/ | sed 's,/, / ,g')
    echo "| GPT: 6 layers, 6 heads, width 384, vocabulary 256, AdamW, $NT threads | PyTorch eager | lazytensor | lazytensor against PyTorch |"
    echo "|---|---|---|---|"
    echo "| step, batch $batch, block $block (median of $reps after 2 warm-up steps; $(nrounds)) | $(stats %.0f < "$tmp/gt") ms | $(stats %.0f < "$tmp/go") ms | $(stats %.2f < "$tmp/gr")x faster |"
    echo "| trace of that step | | $(stats %.2f < "$tmp/gtr") ms | |"
    echo "| step, batch $2, block $3 | $bt ms | $bo ms | $(div "$bt" "$bo" %.1f)x faster |"
    echo "| peak RSS growth of those steps | $mt MiB | $mo MiB | $(div "$mo" "$mt")x the memory |"
    set -- $huge
    echo "| step, batch $2, block $3 | $ht ms | $ho ms | $(div "$ht" "$ho" %.1f)x faster |"
    echo "| peak RSS growth of those steps | $hmt MiB | $hmo MiB | $(div "$hmo" "$hmt")x the memory |"
    echo "| attention forward, batch 4, 6 heads, dim 64, T 256 / 512 / 1024: peak memory | $at MiB (RSS growth) | $ao MiB (\`PeakBytes\`) | $(div "${ao##* }" "${at##* }")x at T 1024 |"
}

sec_data() {
    echo "### Input pipeline against torchvision"
    echo
    need lazytensor bench_resize || return
    if have_tv; then
        if [ "$QUICK" = 1 ]; then set -- REPS=1 STEPS=4; else set -- REPS=$ROUNDS; fi
        env "$@" sh "$here/bench/compare_data.sh" > "$tmp/cd" 2>&1 || { cat "$tmp/cd"; failed compare_data.sh; return; }
        echo "| decode + RandomResizedCrop(224) + flip + normalize, 500x375 JPEGs, 2 threads, batch 32, $(nrounds) | img/s |"
        echo "|---|---|"
        echo "| lazytensor (\`lazytensor bench-data --workers 2\`) | $(awk '/^lazytensor/ { print $2 }' "$tmp/cd" | stats %.1f) |"
        echo "| torchvision \`ImageFolder\` + \`DataLoader(num_workers=2)\` | $(awk '/^lazytensor/ { print $5 }' "$tmp/cd" | stats %.1f) |"
        echo "| lazytensor / torchvision | $(awk '/^lazytensor/ { print $8 }' "$tmp/cd" | stats %.2f)x |"
        echo
    else
        skip "the torchvision comparison: torchvision is missing under $PY (scripts/install-deps.sh)"
    fi
    "$B/bench_resize" $([ "$QUICK" = 1 ] && echo 3 || echo 9) > "$tmp/rs" || { cat "$tmp/rs"; failed bench_resize; return; }
    echo "| antialiased resample of a RandomResizedCrop(224) box, 500x375 RGB (\`build/bench_resize\`) | CPU ms per image | speed-up |"
    echo "|---|---|---|"
    awk '/ wall / { n = $1; for (i = 1; i <= NF; i++) { if ($i == "cpu") c = $(i + 1); if ($i == "(cpu") s = $(i + 1) } sub(/\)$/, "", s)
         printf "| %s | %s | %s |\n", n, c, s }' "$tmp/rs"
}

sec_dist() {
    echo "### Several processes against PyTorch DDP"
    echo
    need lazytensor || return
    command -v mpirun >/dev/null || { skip "mpirun is missing (OpenMPI: scripts/install-deps.sh)"; return; }
    have_torch || { skip "PyTorch is missing under $PY"; return; }
    if [ "$QUICK" = 1 ]; then set -- REPS=1 STEPS=6 TORCH_STEPS=4 DATA=fake; else set -- REPS=$ROUNDS; have_fmnist || set -- "$@" DATA=fake; fi
    env "$@" sh "$here/bench/compare_dist.sh" > "$tmp/cd" 2>&1 || { cat "$tmp/cd"; failed compare_dist.sh; return; }
    # 2x1 thread A img/s, waits on communication W% of the step | 1x2 threads B img/s: ratio R1 | PyTorch DDP 2x1 C img/s: ratio R2
    col() { awk -v k="$1" '/^2x1 thread/ { for (i = 1; i <= NF; i++) if ($i == k) { v = $(i + 1); sub(/%$/, "", v); print v } }' "$tmp/cd"; }
    awk '/^2x1 thread/ { print $3 }' "$tmp/cd" > "$tmp/a"
    awk -F'|' '/^2x1 thread/ { split($2, f, " "); print f[3] }' "$tmp/cd" > "$tmp/b"
    awk -F'|' '/^2x1 thread/ { split($3, f, " "); print f[4] }' "$tmp/cd" > "$tmp/c"
    awk -F'|' '/^2x1 thread/ { n = split($2, f, " "); print f[n] }' "$tmp/cd" > "$tmp/r1"
    awk -F'|' '/^2x1 thread/ { n = split($3, f, " "); print f[n] }' "$tmp/cd" > "$tmp/r2"
    echo "| ResNet-20, AdamW, global batch 128, $(nrounds) | img/s |"
    echo "|---|---|"
    echo "| lazytensor, 2 processes x 1 thread (\`mpirun -np 2 lazytensor train --batch-size 64 --threads 1\`) | $(stats %.0f < "$tmp/a") |"
    echo "| lazytensor, 1 process x 2 threads (\`lazytensor train --batch-size 128 --threads 2\`) | $(stats %.0f < "$tmp/b") |"
    echo "| PyTorch DDP (gloo), 2 processes x 1 thread x 64 | $(stats %.0f < "$tmp/c") |"
    echo "| 2 processes against 1 process | $(stats %.2f < "$tmp/r1")x |"
    echo "| 2 processes against PyTorch DDP | $(stats %.2f < "$tmp/r2")x |"
    echo "| share of the 2-process step spent waiting on communication | $(col communication | stats %.1f)% |"
}

sec_touch() {
    echo "### First touch of memory"
    echo
    need bench_touch || return
    mib=$([ "$QUICK" = 1 ] && echo 64 || echo 1000)
    "$B/bench_touch" "$mib" > /dev/null || { failed bench_touch; return; } # the run the pauses count from
    echo "| \`build/bench_touch $mib\` after a pause of | first touch | warm |"
    echo "|---|---|---|"
    for p in 0 3 10 30; do
        sleep $p
        "$B/bench_touch" "$mib" > "$tmp/t" || { failed bench_touch; return; }
        sed -n "s/.*first touch \\([0-9.]*\\) s, warm \\([0-9.]*\\) s.*/| $p s | \\1 s | \\2 s |/p" "$tmp/t" | head -1
    done
}

sec_torch() {
    echo "### The PyTorch device: tracing cost"
    echo
    need python/lazytensor/torch || { skip "the PyTorch device is not built (libtorch-dev)"; return; }
    have_tv || { skip "PyTorch or torchvision is missing under $PY (scripts/install-deps.sh)"; return; }
    PYTHONPATH=$B/python $PY "$here/bench/torch_device_ops.py" "$ROUNDS" > "$tmp/tops" 2>/dev/null ||
        { cat "$tmp/tops"; failed torch_device_ops.py; return; }
    grep -v '^#' "$tmp/tops"
    echo
    if [ "$QUICK" = 1 ]; then set -- --model resnet18 --batch 2 --size 64 --steps 3; else set -- --batch 32 --size 224 --steps 6; fi
    : > "$tmp/sd"; : > "$tmp/sc"; : > "$tmp/se"; : > "$tmp/py"; : > "$tmp/md"; : > "$tmp/mc"; : > "$tmp/me"
    : > "$tmp/rs"; : > "$tmp/rm"; : > "$tmp/re"; : > "$tmp/uc"; : > "$tmp/rt"; : > "$tmp/rn"
    for r in $(rounds); do # each side its own process (peak RSS is per process)
        for side in dev cli eager; do
            case $side in dev) opt= ;; cli) opt="--cli $B/lazytensor" ;; eager) opt=--eager ;; esac
            PYTHONPATH=$B/python $PY "$here/bench/torch_device_step.py" "$@" --threads "$NT" $opt > "$tmp/st" 2>/dev/null ||
                { cat "$tmp/st"; failed "torch_device_step.py $opt"; return; }
            tail -1 "$tmp/st" | sed -n 's/.*steady step \([0-9.]*\) ms.*/\1/p' > "$tmp/s1"
            tail -1 "$tmp/st" | sed -n 's/.*peak RSS \([0-9.]*\) MB.*/\1/p' > "$tmp/m1"
            cat "$tmp/s1" >> "$tmp/s${side%"${side#?}"}"
            cat "$tmp/m1" >> "$tmp/m${side%"${side#?}"}"
            case $side in
            dev) sd=$(cat "$tmp/s1"); md=$(cat "$tmp/m1")
                rt=$(tail -1 "$tmp/st" | sed -n "s/.*torch's runtime at import \([0-9.]*\) MB.*/\1/p"); echo "$rt" >> "$tmp/rt"
                tail -1 "$tmp/st" | sed -n 's/.*python side \([0-9.]*\) ms.*/\1/p' >> "$tmp/py"
                # uncached compiles after step 2: the last step's count minus step 2's
                awk '/^step 2:/ { a = $NF } /^step [0-9]+:/ { b = $NF } END { print b - a }' "$tmp/st" >> "$tmp/uc" ;;
            cli) div "$sd" "$(cat "$tmp/s1")" %.3f >> "$tmp/rs"; echo >> "$tmp/rs"
                div "$md" "$(cat "$tmp/m1")" %.3f >> "$tmp/rm"; echo >> "$tmp/rm"
                div "$(awk -v a="$md" -v b="$rt" 'BEGIN { print a - b }')" "$(cat "$tmp/m1")" %.3f >> "$tmp/rn"; echo >> "$tmp/rn" ;;
            eager) div "$(cat "$tmp/s1")" "$sd" %.2f >> "$tmp/re"; echo >> "$tmp/re" ;;
            esac
        done
    done
    echo "| ResNet step on the device (\`bench/torch_device_step.py $*\`, SGD, a schedule), $NT threads, $(nrounds) | |"
    echo "|---|---|"
    echo "| device step (torch autograd + torch.optim, trace and execution) | $(stats %.0f < "$tmp/sd") ms |"
    echo "| \`lazytensor train\`, same model and settings | $(stats %.0f < "$tmp/sc") ms |"
    echo "| PyTorch CPU eager | $(stats %.0f < "$tmp/se") ms |"
    echo "| device / CLI step | $(stats %.3f < "$tmp/rs") |"
    echo "| eager / device step (how much faster the device is) | $(stats %.2f < "$tmp/re")x |"
    echo "| the Python side of a device step (before mark_step) | $(stats %.1f < "$tmp/py") ms |"
    echo "| uncached compiles after step 2 | $(stats %.0f < "$tmp/uc") |"
    echo "| peak RSS: device / CLI / eager | $(stats %.0f < "$tmp/md") / $(stats %.0f < "$tmp/mc") / $(stats %.0f < "$tmp/me") MB |"
    echo "| peak RSS, device / CLI | $(stats %.3f < "$tmp/rm") |"
    echo "| the device process's RSS after \`import torch, torchvision\` (before any model) | $(stats %.0f < "$tmp/rt") MB |"
    echo "| peak RSS less that, device / CLI | $(stats %.3f < "$tmp/rn") |"
}

sec_xla() {
    echo "### PyTorch/XLA-style training on several processes"
    echo
    need python/lazytensor/torch || { skip "the PyTorch device is not built (libtorch-dev)"; return; }
    have_tv || { skip "PyTorch or torchvision is missing under $PY (scripts/install-deps.sh)"; return; }
    command -v mpirun >/dev/null || { skip "mpirun is missing (OpenMPI: scripts/install-deps.sh)"; return; }
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    steps=40; [ "$QUICK" = 1 ] && steps=6
    set -- examples/xla_style_train.py --fake_data --model resnet18 --img_dim 64 --batch_size 32 --num_steps $steps
    steady() { sed -n 's/.*, \([0-9.]*\) img\/s after the first.*/\1/p' "$tmp/x"; }
    : > "$tmp/a"; : > "$tmp/b"; : > "$tmp/c"; : > "$tmp/r1"; : > "$tmp/r2"
    for r in $(rounds); do
        (cd "$here" && PYTHONPATH=$B/python LT_NUM_THREADS=1 mpirun --oversubscribe -np 2 -x PYTHONPATH -x LT_NUM_THREADS \
            $PY -m lazytensor.xla "$@") > "$tmp/x" 2>&1 || { cat "$tmp/x"; failed "mpirun -np 2 xla_style_train.py"; return; }
        a=$(steady); echo "$a" >> "$tmp/a"
        (cd "$here" && PYTHONPATH=$B/python LT_NUM_THREADS=2 $PY -m lazytensor.xla "$@" --batch_size 64) > "$tmp/x" 2>&1 ||
            { cat "$tmp/x"; failed "xla_style_train.py"; return; }
        b=$(steady); echo "$b" >> "$tmp/b"
        NT=1 $PY "$here/bench/pytorch_ddp_xla.py" 2 resnet18 64 32 $((steps - 3)) > "$tmp/x" 2>&1 ||
            { cat "$tmp/x"; failed pytorch_ddp_xla.py; return; }
        c=$(sed -n 's/.*: \([0-9.]*\) img\/s$/\1/p' "$tmp/x"); echo "$c" >> "$tmp/c"
        div "$a" "$b" %.3f >> "$tmp/r1"; echo >> "$tmp/r1"
        div "$a" "$c" %.2f >> "$tmp/r2"; echo >> "$tmp/r2"
    done
    echo "| \`examples/xla_style_train.py\` on the device: ResNet-18, 64x64, batch 32 per process, SGD, steps 4-$steps, $(nrounds) | img/s |"
    echo "|---|---|"
    echo "| 2 processes x 1 thread (\`mpirun -np 2 python3 -m lazytensor.xla $*\`) | $(stats %.1f < "$tmp/a") |"
    echo "| 1 process x 2 threads (\`LT_NUM_THREADS=2 python3 -m lazytensor.xla ... --batch_size 64\`: the same global batch) | $(stats %.1f < "$tmp/b") |"
    echo "| PyTorch DDP (gloo), 2 processes x 1 thread (\`NT=1 bench/pytorch_ddp_xla.py 2 resnet18 64 32\`) | $(stats %.1f < "$tmp/c") |"
    echo "| 2 processes against 1 process | $(stats %.3f < "$tmp/r1")x |"
    echo "| 2 processes against PyTorch DDP | $(stats %.2f < "$tmp/r2")x |"
}

sec_other() {
    echo "### Other benchmarks (lazytensor alone)"
    echo
    for b in bench_autograd bench_observe bench_reduce bench_ln; do
        need $b || return
        echo "\`build/$b\`:"
        echo
        lt_env "$B/$b" > "$tmp/o" 2>&1 || { sed 's/^/    /' "$tmp/o"; failed $b; continue; }
        sed 's/^/    /' "$tmp/o"
        echo
    done
}

[ -d "$B" ] || { echo "run_all: $B is missing (make build, or BUILD=dir)" >&2; exit 1; }
all="machine trace python step-trace execution resnet50 bf16 busy gpt data dist touch torch xla other"
[ $# -gt 0 ] || set -- $all
for s; do
    case " $all " in *" $s "*) ;; *) echo "run_all: no section '$s' (sections: $all)" >&2; exit 2 ;; esac
done
echo "Measured $(date -u +%Y-%m-%d) with \`sh bench/run_all.sh\`$([ "$QUICK" = 1 ] && echo ' (QUICK=1: small sizes, the numbers mean nothing)'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
for s; do
    sec=$s
    echo
    case $s in
    step-trace) sec_step_trace ;;
    *) "sec_$s" ;;
    esac
done
echo
if [ -n "$skipped" ]; then printf 'Skipped:%s\n' "$skipped"; else echo "Skipped: nothing."; fi
[ -z "$failed" ] || { echo "Failed:$failed" >&2; exit 1; }
