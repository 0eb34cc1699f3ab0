#!/bin/sh
# The input-pipeline comparison of the README, in one run on one machine:
# decode + RandomResizedCrop(224) + flip + normalize from 500x375 JPEGs with
# 2 threads, `lazytensor bench-data` against torchvision's ImageFolder +
# DataLoader(num_workers=2) (bench/pytorch/imagefolder_data.py) on the same
# files, alternating REPS times (default 3), then the median ratio. Needs python3-torchvision and PIL
# (scripts/install-deps.sh) and a built tree. Exits non-zero, naming
# the step, when any step fails.
#   sh bench/compare_data.sh            (DATA=DIR to use your own folder)
here=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "compare_data: $*" >&2; exit 1; }
dir=${DATA:-${TMPDIR:-/tmp}/lt-bench-jpeg}
steps=${STEPS:-12}
batch=${BATCH:-32}
py="/usr/bin/python3 $here/bench/pytorch/imagefolder_data.py"
[ -x "$here/build/lazytensor" ] || fail "build/lazytensor is missing (make build)"
/usr/bin/python3 -c "import torchvision" 2>/dev/null || fail "torchvision is missing (scripts/install-deps.sh)"
if [ ! -d "$dir/train" ]; then
    echo "== writing 512 JPEGs of 500x375 to $dir"
    $py make "$dir" 512 || fail "writing the JPEGs failed"
fi
num() { sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p'; }
ratios=""
for i in $(seq "${REPS:-3}"); do
    ours=$("$here/build/lazytensor" bench-data --data-dir "$dir" --image-size 224 --workers 2 --batch-size "$batch" \
        --steps "$steps" --report json | num)
    [ -n "$ours" ] || fail "lazytensor bench-data failed"
    theirs=$($py run "$dir" 2 "$steps" "$batch" | num)
    [ -n "$theirs" ] || fail "torchvision's DataLoader failed"
    r=$(echo "$ours $theirs" | awk '{printf "%.2f", $1/$2}')
    ratios="$ratios $r"
    echo "lazytensor $ours img/s   torchvision $theirs img/s   ratio $r"
done
echo "median ratio $(echo $ratios | tr ' ' '\n' | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}') over${ratios}"
