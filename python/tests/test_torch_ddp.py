"""Two-GPU DistributedDataParallel under amdnn.torch against one GPU on the
global batch (python/tests/ddp_check.py under torchrun; skipped without two
GPUs and a CUDA build)."""
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.cuda]
torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_ddp_two_gpus_equal_one_gpu_on_the_global_batch():
    script = os.path.join(os.path.dirname(__file__), "ddp_check.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", script]
    env = dict(os.environ, NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert r.stdout.count(": ok") == 2
