#!/usr/bin/env bash
# Train the frontier LSTM-CS candidates (issue 25) and the shipped LISTA/LAMP models
# (issue 24) at once on one GPU machine (16 CPU cores, one H100), each with the same
# training budget.  The candidates are then compared on validation data
# (benchmarks/bench_frontier.py) and only the chosen ones are shipped.
#   BUDGET=330 bash scripts/train_frontier_gpu.sh OUT_DIR
# Needs: python3 with torch (CUDA), numpy, scipy, pybind11, cmake, ninja; the MNIST
# files in shared/data/mnist and the MSRC split cache shared/data/msrc64.npz
# (scripts/train_pretrained.py --msrc-cache writes it from ../shared/data/msrc-v2).
set -u
out=${1:-frontier-out}
budget=${BUDGET:-330}
data=${DATA:-shared/data}
mkdir -p "$out/models" "$out/logs"
export PYTHONPATH=python OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
nvidia-smi -L
echo "cores: $(nproc)"
t0=$SECONDS
JOBS=16 PYTHON=python3 bash scripts/dev-build.sh >"$out/logs/build.log" 2>&1 \
  || { tail -40 "$out/logs/build.log"; exit 1; }
echo "core built in $((SECONDS - t0)) s"
python3 -c "import cscore, torch; print('isa', cscore.instruction_set(), 'torch', torch.__version__, torch.cuda.is_available())" || exit 1
# many small processes share the GPU better through MPS; go on without it if it fails
if nvidia-cuda-mps-control -d 2>/dev/null; then
  if ! timeout 60 python3 -c "import torch; torch.zeros(1, device='cuda'); print('mps ok')"; then
    echo quit | nvidia-cuda-mps-control; echo "mps off"
  fi
fi
cmd_lstm=(python3 scripts/train_pretrained.py --device cuda --max-seconds "$budget" --max-epochs 1000
          --data "$data/mnist" --msrc-cache "$data/msrc64.npz" --out "$out/models")
for n in mnist-m72-r mnist-m72-t mnist-m72-r768 mnist-m36-r mnist-m36-t mnist-m36-r768 \
         msrc-buildings-dct-m32-lstm-v2 msrc-buildings-dct-m32-blstm-v2 \
         msrc-buildings-haar-m32-lstm-v2 msrc-buildings-haar-m32-blstm-v2; do
  timeout $((budget + 120)) "${cmd_lstm[@]}" "$n" >"$out/logs/$n.log" 2>&1 &
done
for n in lamp-bg-n500-m250 lista-n500-m250 lamp-bg-mnist-m72 lista-mnist-m72; do
  timeout $((budget + 120)) python3 scripts/train_unrolled.py "$n" --device cuda \
    --max-seconds "$budget" --data "$data/mnist" --out "$out/models" >"$out/logs/$n.log" 2>&1 &
done
sleep 60; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv
wait
echo "all done at $((SECONDS - t0)) s"
tail -n 3 "$out"/logs/*.log
ls -la "$out/models"
