"""What the examples share: joining colo (from colo run's environment, or
a one-machine cluster in this process), the data directory, and the
number of steps every worker takes per epoch (under BSP every worker
pushes the same number of times)."""

import math
import os

import colo

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("COLO_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))


def join(optimizer):
    """colo.init() from the environment that colo run, DMLC, mpirun or srun
    set; without one, a one-machine cluster in this process whose server
    runs optimizer."""
    launched = ("COLO_SCHEDULER", "DMLC_PS_ROOT_URI", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
    if any(os.environ.get(k) for k in launched):
        colo.init(optimizer=optimizer)
    else:
        colo.init(local=True, optimizer=optimizer)


def steps_per_epoch(n_mine, batch):
    """The steps of an epoch, the same on every worker: the largest
    worker's share of the data in batches of batch."""
    counts = colo.allreduce([float(n_mine) if r == colo.rank() else 0.0 for r in range(colo.size())])
    return max(1, math.ceil(max(counts) / batch))
