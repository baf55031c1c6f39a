# Sourced by the device scripts (gpu-suite.sh, gpu-bench.sh) after they set
# $work, $out and say(): unpacks the device bundle's payload into $work, sets
# the environment its binaries need there, names bin=$work/bin and records
# the device and the bundle's commit in the summary.
tar -C "$work" -xJf device-bundle/payload.tar.xz || exit 2
export LD_LIBRARY_PATH=$work/lib:/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
export PYTHONUNBUFFERED=1
bin=$work/bin
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
say "bundle built from commit: $(cat "$work/COMMIT" 2>/dev/null || echo unknown)"
