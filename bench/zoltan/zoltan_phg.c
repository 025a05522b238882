/*
 * zoltan_phg partitions the vertices of a hypergraph in hMETIS format
 * (`colo convert FILE --to hmetis`: vertices are the samples, nets the
 * parameters) into K parts with Zoltan's parallel hypergraph partitioner
 * PHG, and writes one part per vertex per line, the data part file that
 * `colo eval --data-part` scores.
 *
 *	zoltan_phg HGR K OUT [IMBALANCE_TOL] [SEED]
 *
 * IMBALANCE_TOL is Zoltan's (default 1.03, colo's --refine-epsilon 0.03),
 * SEED Zoltan's SEED (default 1); ZOLTAN_PARAMS="KEY=VALUE,..." in the
 * environment sets any other of Zoltan's parameters. On standard error it prints the seconds
 * of reading and of Zoltan_LB_Partition. Run it as an MPI program (mpirun
 * -np 1, or more processes: rank 0 reads the file and hands the vertices
 * out in contiguous ranges, each rank's pins of its own vertices).
 *
 * Errors name the file and line and exit with status 1. Pin offsets are
 * ints: up to 2^31 - 1 pins.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <zoltan.h>

/* hg is one rank's share of the hypergraph, stored by vertex: for each
 * local vertex the nets it is a pin of (ZOLTAN_COMPRESSED_VERTEX). */
typedef struct {
	int nvtx_global, nnets;
	int first, nvtx;        /* local vertices: first .. first+nvtx-1 */
	int *start;             /* nvtx+1 offsets into nets */
	ZOLTAN_ID_TYPE *nets;   /* net (global id) of each pin */
} hg;

static void die(const char *msg) {
	fprintf(stderr, "zoltan_phg: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (!p) die("out of memory");
	return p;
}

/* read_hmetis reads the whole file on rank 0 into a vertex-major CSR of
 * all vertices. */
static void read_hmetis(const char *path, hg *all) {
	FILE *f = fopen(path, "r");
	char msg[512];
	if (!f) {
		snprintf(msg, sizeof msg, "%s: %s", path, strerror(errno));
		die(msg);
	}
	size_t cap = 0;
	char *line = NULL;
	long lineno = 0;
	int nnets = -1, nvtx = -1;
	/* First pass into a net-major list, then transpose. */
	int *nstart = NULL, *pins = NULL;
	size_t npins = 0, pcap = 0;
	int net = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		if (line[0] == '%') continue;
		if (nnets < 0) {
			int fmt = 0;
			int got = sscanf(line, "%d %d %d", &nnets, &nvtx, &fmt);
			if (got < 2 || nnets < 0 || nvtx <= 0 || fmt != 0) {
				snprintf(msg, sizeof msg, "%s:%ld: want \"nets vertices\" (unweighted), got %.60s", path, lineno, line);
				die(msg);
			}
			nstart = xmalloc(sizeof(int) * ((size_t)nnets + 1));
			nstart[0] = 0;
			continue;
		}
		if (net >= nnets && strspn(line, " \t\r\n") == strlen(line)) continue; /* trailing blank lines */
		if (net >= nnets) {
			snprintf(msg, sizeof msg, "%s:%ld: more nets than the %d the header gives", path, lineno, nnets);
			die(msg);
		}
		char *p = line, *end;
		for (;;) {
			long v = strtol(p, &end, 10);
			if (end == p) break;
			if (v < 1 || v > nvtx) {
				snprintf(msg, sizeof msg, "%s:%ld: vertex %ld out of 1..%d", path, lineno, v, nvtx);
				die(msg);
			}
			if (npins == pcap) {
				pcap = pcap ? 2 * pcap : 1 << 20;
				pins = realloc(pins, sizeof(int) * pcap);
				if (!pins) die("out of memory");
			}
			pins[npins++] = (int)v - 1;
			p = end;
		}
		nstart[++net] = (int)npins;
	}
	free(line);
	fclose(f);
	if (nnets < 0 || net != nnets) {
		snprintf(msg, sizeof msg, "%s: %d nets, the header gives %d", path, net, nnets);
		die(msg);
	}
	all->nvtx_global = nvtx;
	all->nnets = nnets;
	all->first = 0;
	all->nvtx = nvtx;
	all->start = xmalloc(sizeof(int) * ((size_t)nvtx + 1));
	memset(all->start, 0, sizeof(int) * ((size_t)nvtx + 1));
	for (size_t i = 0; i < npins; i++) all->start[pins[i] + 1]++;
	for (int v = 0; v < nvtx; v++) all->start[v + 1] += all->start[v];
	all->nets = xmalloc(sizeof(ZOLTAN_ID_TYPE) * (npins ? npins : 1));
	int *fill = xmalloc(sizeof(int) * (size_t)nvtx);
	memcpy(fill, all->start, sizeof(int) * (size_t)nvtx);
	for (int n = 0; n < nnets; n++)
		for (int i = nstart[n]; i < nstart[n + 1]; i++)
			all->nets[fill[pins[i]]++] = (ZOLTAN_ID_TYPE)n;
	free(fill);
	free(pins);
	free(nstart);
}

static int num_obj(void *data, int *ierr) {
	*ierr = ZOLTAN_OK;
	return ((hg *)data)->nvtx;
}

static void obj_list(void *data, int ng, int nl, ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR lids,
                     int wdim, float *w, int *ierr) {
	hg *h = data;
	(void)ng; (void)nl; (void)wdim; (void)w;
	for (int i = 0; i < h->nvtx; i++) {
		gids[i] = (ZOLTAN_ID_TYPE)(h->first + i);
		lids[i] = (ZOLTAN_ID_TYPE)i;
	}
	*ierr = ZOLTAN_OK;
}

static void hg_size(void *data, int *nlists, int *npins, int *format, int *ierr) {
	hg *h = data;
	*nlists = h->nvtx;
	*npins = h->start[h->nvtx];
	*format = ZOLTAN_COMPRESSED_VERTEX;
	*ierr = ZOLTAN_OK;
}

static void hg_cs(void *data, int ng, int nlists, int npins, int format,
                  ZOLTAN_ID_PTR vtx, int *ptr, ZOLTAN_ID_PTR pins, int *ierr) {
	hg *h = data;
	(void)ng; (void)format;
	if (nlists != h->nvtx || npins != h->start[h->nvtx]) {
		*ierr = ZOLTAN_FATAL;
		return;
	}
	for (int i = 0; i < h->nvtx; i++) {
		vtx[i] = (ZOLTAN_ID_TYPE)(h->first + i);
		ptr[i] = h->start[i];
	}
	memcpy(pins, h->nets, sizeof(ZOLTAN_ID_TYPE) * (size_t)npins);
	*ierr = ZOLTAN_OK;
}

/* scatter hands rank r the contiguous range of vertices r·n/P .. with
 * their pins. */
static void scatter(hg *all, hg *mine, int rank, int size) {
	int hdr[2];
	if (rank == 0) {
		hdr[0] = all->nvtx_global;
		hdr[1] = all->nnets;
	}
	MPI_Bcast(hdr, 2, MPI_INT, 0, MPI_COMM_WORLD);
	mine->nvtx_global = hdr[0];
	mine->nnets = hdr[1];
	int n = hdr[0];
	mine->first = (int)((long)n * rank / size);
	mine->nvtx = (int)((long)n * (rank + 1) / size) - mine->first;
	if (size == 1) {
		mine->start = all->start;
		mine->nets = all->nets;
		return;
	}
	mine->start = xmalloc(sizeof(int) * ((size_t)mine->nvtx + 1));
	if (rank == 0) {
		for (int r = 1; r < size; r++) {
			int f = (int)((long)n * r / size), l = (int)((long)n * (r + 1) / size);
			int cnt = all->start[l] - all->start[f];
			MPI_Send(&all->start[f], l - f + 1, MPI_INT, r, 0, MPI_COMM_WORLD);
			MPI_Send(&all->nets[all->start[f]], cnt, MPI_UNSIGNED, r, 1, MPI_COMM_WORLD);
		}
		memcpy(mine->start, all->start, sizeof(int) * ((size_t)mine->nvtx + 1));
		mine->nets = all->nets;
		return;
	}
	MPI_Recv(mine->start, mine->nvtx + 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	int base = mine->start[0];
	for (int i = 0; i <= mine->nvtx; i++) mine->start[i] -= base;
	int npins = mine->start[mine->nvtx];
	mine->nets = xmalloc(sizeof(ZOLTAN_ID_TYPE) * (size_t)(npins ? npins : 1));
	MPI_Recv(mine->nets, npins, MPI_UNSIGNED, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 4 || argc > 6) {
		if (rank == 0) fprintf(stderr, "usage: zoltan_phg HGR K OUT [IMBALANCE_TOL] [SEED]\n");
		MPI_Finalize();
		return 2;
	}
	if (sizeof(ZOLTAN_ID_TYPE) != sizeof(unsigned)) die("this driver wants 32-bit Zoltan ids");
	int k = atoi(argv[2]);
	if (k < 1) die("K must be a positive number of parts");
	const char *tol = argc > 4 ? argv[4] : "1.03";
	const char *seed = argc > 5 ? argv[5] : "1";

	double t0 = MPI_Wtime();
	hg all = {0}, mine = {0};
	if (rank == 0) read_hmetis(argv[1], &all);
	scatter(&all, &mine, rank, size);
	double t1 = MPI_Wtime();

	float ver;
	if (Zoltan_Initialize(argc, argv, &ver) != ZOLTAN_OK) die("Zoltan_Initialize failed");
	struct Zoltan_Struct *zz = Zoltan_Create(MPI_COMM_WORLD);
	char kbuf[32];
	snprintf(kbuf, sizeof kbuf, "%d", k);
	Zoltan_Set_Param(zz, "DEBUG_LEVEL", "0");
	Zoltan_Set_Param(zz, "LB_METHOD", "HYPERGRAPH");
	Zoltan_Set_Param(zz, "HYPERGRAPH_PACKAGE", "PHG");
	Zoltan_Set_Param(zz, "LB_APPROACH", "PARTITION");
	Zoltan_Set_Param(zz, "NUM_GID_ENTRIES", "1");
	Zoltan_Set_Param(zz, "NUM_LID_ENTRIES", "1");
	Zoltan_Set_Param(zz, "NUM_GLOBAL_PARTS", kbuf);
	Zoltan_Set_Param(zz, "RETURN_LISTS", "PARTS");
	Zoltan_Set_Param(zz, "OBJ_WEIGHT_DIM", "0");
	Zoltan_Set_Param(zz, "EDGE_WEIGHT_DIM", "0");
	Zoltan_Set_Param(zz, "IMBALANCE_TOL", tol);
	Zoltan_Set_Param(zz, "SEED", seed);
	/* Keep every net, however large: each is a parameter whose traffic
	 * counts (Zoltan drops nets over a quarter of the vertices by default). */
	Zoltan_Set_Param(zz, "PHG_EDGE_SIZE_THRESHOLD", "1.0");
	/* ZOLTAN_PARAMS="KEY=VALUE,KEY=VALUE" sets any other parameter. */
	const char *extra = getenv("ZOLTAN_PARAMS");
	if (extra && *extra) {
		char *list = strdup(extra), *save = NULL;
		for (char *kv = strtok_r(list, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(kv, '=');
			if (!eq) die("ZOLTAN_PARAMS: want KEY=VALUE pairs separated by commas");
			*eq = 0;
			if (Zoltan_Set_Param(zz, kv, eq + 1) != ZOLTAN_OK) {
				char msg[256];
				snprintf(msg, sizeof msg, "ZOLTAN_PARAMS: Zoltan refused %s=%s", kv, eq + 1);
				die(msg);
			}
		}
		free(list);
	}
	Zoltan_Set_Num_Obj_Fn(zz, num_obj, &mine);
	Zoltan_Set_Obj_List_Fn(zz, obj_list, &mine);
	Zoltan_Set_HG_Size_CS_Fn(zz, hg_size, &mine);
	Zoltan_Set_HG_CS_Fn(zz, hg_cs, &mine);

	int changes, ngid, nlid, nimp, nexp;
	ZOLTAN_ID_PTR igid, ilid, egid, elid;
	int *iproc, *ipart, *eproc, *epart;
	MPI_Barrier(MPI_COMM_WORLD);
	double t2 = MPI_Wtime();
	if (Zoltan_LB_Partition(zz, &changes, &ngid, &nlid, &nimp, &igid, &ilid, &iproc, &ipart,
	                        &nexp, &egid, &elid, &eproc, &epart) != ZOLTAN_OK)
		die("Zoltan_LB_Partition failed");
	double t3 = MPI_Wtime();

	/* With RETURN_LISTS=PARTS the export list holds every local vertex. */
	int *part = xmalloc(sizeof(int) * (size_t)(mine.nvtx ? mine.nvtx : 1));
	for (int i = 0; i < mine.nvtx; i++) part[i] = -1;
	for (int i = 0; i < nexp; i++) part[elid[i]] = epart[i];
	for (int i = 0; i < mine.nvtx; i++)
		if (part[i] < 0 || part[i] >= k) die("Zoltan returned no part, or one out of range, for a vertex");
	int *allpart = NULL, *counts = NULL, *displs = NULL;
	if (rank == 0) {
		allpart = xmalloc(sizeof(int) * (size_t)mine.nvtx_global);
		counts = xmalloc(sizeof(int) * (size_t)size);
		displs = xmalloc(sizeof(int) * (size_t)size);
		for (int r = 0; r < size; r++) {
			displs[r] = (int)((long)mine.nvtx_global * r / size);
			counts[r] = (int)((long)mine.nvtx_global * (r + 1) / size) - displs[r];
		}
	}
	MPI_Gatherv(part, mine.nvtx, MPI_INT, allpart, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		FILE *out = fopen(argv[3], "w");
		if (!out) {
			char msg[512];
			snprintf(msg, sizeof msg, "%s: %s", argv[3], strerror(errno));
			die(msg);
		}
		for (int v = 0; v < mine.nvtx_global; v++) fprintf(out, "%d\n", allpart[v]);
		if (fclose(out) != 0) die("writing the part file failed");
		fprintf(stderr, "zoltan_phg: read %.3f s, partition %.3f s, %d vertices, %d nets, k %d, %d processes\n",
		        t1 - t0, t3 - t2, mine.nvtx_global, mine.nnets, k, size);
	}
	Zoltan_LB_Free_Part(&igid, &ilid, &iproc, &ipart);
	Zoltan_LB_Free_Part(&egid, &elid, &eproc, &epart);
	Zoltan_Destroy(&zz);
	MPI_Finalize();
	return 0;
}
