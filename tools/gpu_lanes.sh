#!/usr/bin/env bash
# Study lanes on a CUDA machine (docs/studies.md, "Running on a CUDA machine").
#
# Usage, in the repository root of a machine with a CUDA GPU:
#   OUT=DIR [LANES=11] [BUDGET=440] [PYTHON=python3] bash tools/gpu_lanes.sh KIT KEY...
#   KIT     a folder with the data files the runs read (mnist.npz, cifar10.npz: it becomes
#           DPDL_DATA_MIRROR) and any wheels the Python environment lacks (e.g. dp-accounting,
#           dm-tree), installed into /tmp/site; a KIT without wheels installs nothing
#   KEY     study keys as `python -m dpdl_core study plan` names them, with the paper
#           (pdsl:mnist/fc20/eps0.3/Q500/PDSL)
#   OUT     an existing folder for the results
#   LANES   `study run --device cuda` processes sharing the GPU (default 11)
#   BUDGET  seconds before the lanes are stopped (default 440)
# Every lane walks all the keys in priority order and skips the runs another lane holds. After
# BUDGET seconds the lanes get Ctrl-C (SIGINT): a run finishes its round and checkpoints it, and
# a lane still busy 60 s later is killed, so allow a minute beyond BUDGET. The run files stored
# since the start go to $OUT/results.tgz; the checkpoints of the runs cut to $OUT/checkpoints.tgz
# (a GPU twin's: committed, the next `study run --device cuda` resumes the run; CPU workers
# compute their own twin from round 1); the lanes' logs, with progress lines, to $OUT/lanes.tgz.
# Unpack the archives in the repository (tar xzf) and commit the runs.
set -u
if [ $# -lt 2 ] || [ -z "${OUT:-}" ]; then
  echo "usage: OUT=DIR [LANES=11] [BUDGET=440] [PYTHON=python3] bash $0 KIT KEY..." >&2
  exit 2
fi
kit=$(realpath "$1"); shift
py=${PYTHON:-python3}
if compgen -G "$kit/*.whl" > /dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$kit"/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export DPDL_DATA_MIRROR=$kit DPDL_PROGRESS=log PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
keys=(); for k in "$@"; do keys+=(--key "$k"); done
start=$(mktemp); logs=$(mktemp -d)
for i in $(seq "${LANES:-11}"); do
  # -k: a second signal 60 s later stops a lane that is still finishing its round
  timeout -s INT -k 60 "${BUDGET:-440}" "$py" -m dpdl_core study run --device cuda "${keys[@]}" > "$logs/lane$i.log" 2>&1 &
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
  "unpack in the repository with: tar xzf $OUT/results.tgz (and checkpoints.tgz)"
