#!/usr/bin/env bash
# Study lanes on a lent GPU machine (docs/studies.md, "A GPU where one is lent").
#
# Usage, on that machine: [LANES=11] [BUDGET=440] bash tools/gpu_lanes.sh KIT KEY...
#   KIT  a folder carried with the tree: the wheels the machine lacks (dp-accounting, dm-tree)
#        and the data mirror's files the runs read (mnist.npz)
#   KEY  study keys as `python -m dpdl_core study plan` names them, with the paper (pdsl:mnist/…)
# Every lane walks all the keys in priority order and skips the runs another lane holds. After
# BUDGET seconds the lanes get Ctrl-C (SIGINT): a run finishes its round and checkpoints it, so
# leave the call a minute beyond BUDGET. The run files stored since the start go to
# $OUT/results.tgz; the checkpoints of the runs cut to $OUT/checkpoints.tgz (a GPU twin's: commit
# it and the next lent GPU resumes the run; CPU workers compute their own twin from round 1);
# the lanes' logs, with progress lines, to $OUT/lanes.tgz (the machine returns 8 files at most).
set -u
if [ $# -lt 2 ] || [ -z "${OUT:-}" ]; then
  echo "usage: [LANES=11] [BUDGET=440] bash $0 KIT KEY... (on the device machine, where \$OUT is set)" >&2
  exit 2
fi
kit=$(realpath "$1"); shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$kit"/*.whl || exit 1
export PYTHONPATH=/tmp/site DPDL_DATA_MIRROR=$kit DPDL_PROGRESS=log PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
keys=(); for k in "$@"; do keys+=(--key "$k"); done
start=$(mktemp); logs=$(mktemp -d)
for i in $(seq "${LANES:-11}"); do
  # -k: a second signal 60 s later stops a lane that is still finishing its round
  timeout -s INT -k 60 "${BUDGET:-440}" python3 -m dpdl_core study run --device cuda "${keys[@]}" > "$logs/lane$i.log" 2>&1 &
  sleep 3  # lanes claim runs one after another
done
wait
find results -name '*.csv.gz' -newer "$start" > "$logs/stored.txt"
tar czf "$OUT/results.tgz" -T "$logs/stored.txt"
find results -path '*/checkpoints/*' -type f -newer "$start" > "$logs/checkpoints.txt"
[ -s "$logs/checkpoints.txt" ] && tar czf "$OUT/checkpoints.tgz" -T "$logs/checkpoints.txt"
tar czf "$OUT/lanes.tgz" -C "$logs" .
grep -h " stored " "$logs"/lane*.log
grep -h "interrupted at round" "$logs"/lane*.log
echo "$(wc -l < "$logs/stored.txt") runs stored, $(wc -l < "$logs/checkpoints.txt") checkpoints of runs cut;" \
  "unpack here with: tar xzf <files_at>/results.tgz (and checkpoints.tgz)"
