#!/usr/bin/env bash
# Study lanes on a lent GPU machine (docs/studies.md, "A GPU where one is lent").
#
# Usage, on that machine: [LANES=11] [BUDGET=440] bash tools/gpu_lanes.sh KIT KEY...
#   KIT  a folder carried with the tree: the wheels the machine lacks (dp-accounting, dm-tree)
#        and the data mirror's files the runs read (mnist.npz)
#   KEY  study keys as `python -m dpdl_core study plan` names them, with the paper (pdsl:mnist/…)
# Every lane walks all the keys in priority order and skips the runs another lane holds. After
# BUDGET seconds the lanes are stopped (a run cut there is lost: its checkpoint is a GPU twin's),
# and the run files stored since the start go to $OUT/results.tgz, the lanes' logs to
# $OUT/lanes.tgz (the machine returns 8 files at most).
set -u
if [ $# -lt 2 ] || [ -z "${OUT:-}" ]; then
  echo "usage: [LANES=11] [BUDGET=440] bash $0 KIT KEY... (on the device machine, where \$OUT is set)" >&2
  exit 2
fi
kit=$(realpath "$1"); shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$kit"/*.whl || exit 1
export PYTHONPATH=/tmp/site DPDL_DATA_MIRROR=$kit DPDL_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
keys=(); for k in "$@"; do keys+=(--key "$k"); done
start=$(mktemp); logs=$(mktemp -d)
for i in $(seq "${LANES:-11}"); do
  timeout "${BUDGET:-440}" python3 -m dpdl_core study run --device cuda "${keys[@]}" > "$logs/lane$i.log" 2>&1 &
  sleep 3  # lanes claim runs one after another
done
wait
find results -name '*.csv.gz' -newer "$start" > "$logs/stored.txt"
tar czf "$OUT/results.tgz" -T "$logs/stored.txt"
tar czf "$OUT/lanes.tgz" -C "$logs" .
grep -h " stored " "$logs"/lane*.log
echo "$(wc -l < "$logs/stored.txt") runs stored; unpack here with: tar xzf <files_at>/results.tgz"
