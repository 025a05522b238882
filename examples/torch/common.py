"""What the examples share: joining colo (from colo run's environment, or
a one-machine cluster in this process), the data directory, and the
number of steps every worker takes per epoch (under BSP every worker
pushes the same number of times)."""

import math
import os
import sys

import colo

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("COLO_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))
# The copy of 20 Newsgroups that ships in the repository (datasets/20news).
SHIPPED = os.path.normpath(os.path.join(HERE, "..", "..", "datasets", "20news"))


def need(directory, files, what):
    """Exit, naming the folder, the files missing and --data, when the
    data the example reads is not at directory: the datasets are not in
    the repository (but for 20 Newsgroups), they are in ../shared/data
    (COLO_DATA) or where --data says."""
    missing = [f for f in files if not os.path.isfile(os.path.join(directory, f))]
    if missing:
        sys.exit("%s: no %s in %s (%s missing): pass --data DIR, or set COLO_DATA to the folder that holds %s/"
                 % (os.path.basename(sys.argv[0]), what, os.path.normpath(directory), ", ".join(missing),
                    os.path.basename(os.path.normpath(directory))))


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
