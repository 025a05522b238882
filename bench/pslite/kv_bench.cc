// kv_bench.cc is the peer of `colo bench kv` on dmlc/ps-lite: the shape of
// ps-lite's own tests/test_kv_app_benchmark.cc (a KVServer with a request
// handle, a KVWorker that pushes and pulls and waits for each request),
// with colo's requests and a summing array store like colo's servers.
//
// Requests, as colo's internal/workload and bench/kv:
//   sparse: SPARSE_KEYS (100,000) distinct keys of [0, 2^24) drawn by Go's
//     math/rand/v2 PCG seeded (7, 7) -- the same key set as colo's
//     workload.SparseKeySet -- one float32 each, keys sent as 8 bytes.
//   dense: DENSE_VALS (2^20) float32 covering the whole dense model, split
//     evenly over the servers; each server's part travels as one key with
//     its length (ps-lite's lens), as MXNet sends a large array.
// ps-lite's default slicer splits the key space [0, 2^64) evenly over the
// servers; colo splits [0, 2^24) (sparse) and [0, 2^20) (dense) evenly, so
// a key k of a space of 2^b keys is sent as k << (64 - b): every server
// gets the same keys as colo's.
//
// Servers: app 0 is the sparse store (the server's share of 2^24 float32),
// app 1 the dense store (its part of the dense model). A push adds its
// values into the store; a pull answers the stored values (a dense pull
// answers a view of the store, without a copy, as colo does). The stores
// are advised to transparent huge pages, as colo's (ps/server/huge_linux.go).
//
// Workers: for each kind in turn (sparse push, sparse pull, dense push,
// dense pull) every worker waits at a barrier of the workers, sends one
// request to warm up (command kWarmUp), waits at a second barrier, then
// sends requests one at a time, each waited for (one request in flight),
// for DURATION_MS milliseconds, and prints one
// line of JSON with the CPU time of its process over the kind and its
// latencies, in nanoseconds:
//   {"rank":0,"mode":"sparse","op":"push","keys":100000,"cpu_ns":...,"lat_ns":[...]}
// A server prints at its end the CPU time of its process per kind, from
// the first timed request of a kind to the next warm-up:
//   {"server":0,"cpu_ns":{"sparse-push":...,"sparse-pull":...,...}}
// The script run.py beside this file starts the scheduler, servers and
// workers, and merges these lines into colo bench kv's records.
//
// Environment: ps-lite's own (DMLC_ROLE, DMLC_NUM_SERVER, DMLC_NUM_WORKER,
// DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NODE_HOST), and
// KV_DURATION_MS (1000), KV_SPARSE_KEYS (100000), KV_DENSE_VALS (1048576),
// KV_KINDS (all four, e.g. "sparse-push,dense-pull").
//
// `kv_bench keysum` prints the count, first, last and sum of the sparse key
// set, which colo's internal/workload test checks against Go's.

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "ps/ps.h"

using namespace ps;

namespace {

const uint64_t kSparseSpaceBits = 24;

// Pcg is Go's math/rand/v2 PCG: a 128-bit LCG with the DXSM output.
struct Pcg {
  uint64_t hi, lo;
  uint64_t Next() {
    const uint64_t mulHi = 2549297995355413924ULL, mulLo = 4865540595714422341ULL;
    const uint64_t incHi = 6364136223846793005ULL, incLo = 1442695040888963407ULL;
    unsigned __int128 m = (unsigned __int128)lo * mulLo;
    uint64_t h = (uint64_t)(m >> 64) + hi * mulLo + lo * mulHi;
    uint64_t l = (uint64_t)m;
    unsigned __int128 s = ((unsigned __int128)h << 64 | l) +
                          ((unsigned __int128)incHi << 64 | incLo);
    hi = (uint64_t)(s >> 64);
    lo = (uint64_t)s;
    uint64_t x = hi;
    x ^= x >> 32;
    x *= 0xda942042e4dd58b5ULL;
    x ^= x >> 48;
    x *= (lo | 1);
    return x;
  }
};

// SparseKeySet is colo's workload.SparseKeySet for n keys: distinct keys of
// [0, 2^24) drawn by PCG(7, 7) (Uint64N of a power of two masks), sorted.
std::vector<uint64_t> SparseKeySet(int n) {
  Pcg r{7, 7};
  std::unordered_set<uint64_t> seen;
  std::vector<uint64_t> keys;
  keys.reserve(n);
  while ((int)keys.size() < n) {
    uint64_t k = r.Next() & ((1ULL << kSparseSpaceBits) - 1);
    if (seen.insert(k).second) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// CPUNanos returns the CPU time of this process, every thread of it.
int64_t CPUNanos() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

// kWarmUp is the command of a worker's warm-up requests, not timed.
const int kWarmUp = 1;

// Kinds times a server's CPU per request kind: from the first timed
// request of a kind to the next warm-up (the workers run the kinds one
// after the other, the warm-ups of all of them between two barriers),
// the last one until the server ends.
struct Kinds {
  std::mutex mu;
  std::string cur;
  int64_t since = 0;
  std::vector<std::pair<std::string, int64_t>> cpu;

  // Enter notes a request of the kind; a warm-up request (kWarmUp) ends
  // the kind being timed and starts none.
  void Enter(const char* mode, const KVMeta& meta) {
    std::string k = meta.cmd == kWarmUp ? "" : std::string(mode) + (meta.push ? "-push" : "-pull");
    std::lock_guard<std::mutex> lk(mu);
    if (k == cur) return;
    int64_t now = CPUNanos();
    if (!cur.empty()) cpu.emplace_back(cur, now - since);
    cur = k;
    since = now;
  }

  // Line closes the last kind and returns the server's line of JSON.
  std::string Line(int rank) {
    std::lock_guard<std::mutex> lk(mu);
    if (!cur.empty()) cpu.emplace_back(cur, CPUNanos() - since);
    cur.clear();
    std::string line = "{\"server\":" + std::to_string(rank) + ",\"cpu_ns\":{";
    for (size_t i = 0; i < cpu.size(); ++i) {
      if (i) line += ",";
      line += "\"" + cpu[i].first + "\":" + std::to_string(cpu[i].second);
    }
    return line + "}}\n";
  }
};

int EnvInt(const char* name, int def) {
  const char* v = getenv(name);
  if (v == nullptr || *v == 0) return def;
  char* end;
  long x = strtol(v, &end, 10);
  if (*end != 0 || x < 1) {
    fprintf(stderr, "kv_bench: %s=%s: want a positive integer\n", name, v);
    exit(2);
  }
  return (int)x;
}

int Log2(uint64_t n) {
  int b = 0;
  while ((1ULL << b) < n) ++b;
  return b;
}

// HugeArray returns n zeroed floats advised to transparent huge pages.
float* HugeArray(size_t n) {
  const size_t huge = 2 << 20;
  size_t bytes = (n * sizeof(float) + huge - 1) / huge * huge;
  void* p = nullptr;
  if (posix_memalign(&p, huge, bytes) != 0) {
    fprintf(stderr, "kv_bench: cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  memset(p, 0, bytes);
  return static_cast<float*>(p);
}

// The server's stores. Each handle runs on its app's customer thread.
struct SparseStore {
  Kinds* kinds;
  float* vals;
  uint64_t first;  // the first key of this server's share, in [0, 2^24)
  size_t n;
  int shift;
  std::vector<SArray<float>> pool;  // answers, reused once ps-lite let go

  SArray<float> Answer(size_t n) {
    for (auto& a : pool)
      if (a.ptr().use_count() == 1 && a.size() == n) return a;
    pool.emplace_back(n);
    return pool.back();
  }

  void Handle(const KVMeta& meta, const KVPairs<float>& req, KVServer<float>* server) {
    kinds->Enter("sparse", meta);
    size_t nk = req.keys.size();
    const Key* keys = req.keys.data();
    if (meta.push) {
      CHECK_EQ(nk, req.vals.size());
      const float* v = req.vals.data();
      for (size_t i = 0; i < nk; ++i) vals[(keys[i] >> shift) - first] += v[i];
      server->Response(meta);
      return;
    }
    KVPairs<float> res;
    res.keys = req.keys;
    res.vals = Answer(nk);
    float* out = res.vals.data();
    for (size_t i = 0; i < nk; ++i) out[i] = vals[(keys[i] >> shift) - first];
    server->Response(meta, res);
  }
};

struct DenseStore {
  Kinds* kinds;
  float* vals;
  size_t n;

  void Handle(const KVMeta& meta, const KVPairs<float>& req, KVServer<float>* server) {
    kinds->Enter("dense", meta);
    CHECK_EQ(req.keys.size(), (size_t)1) << "a dense request is one key per server";
    if (meta.push) {
      CHECK_EQ(req.vals.size(), n);
      const float* v = req.vals.data();
      for (size_t i = 0; i < n; ++i) vals[i] += v[i];
      server->Response(meta);
      return;
    }
    KVPairs<float> res;
    res.keys = req.keys;
    res.vals = SArray<float>(vals, n, false);
    res.lens = SArray<int>(1, (int)n);
    server->Response(meta, res);
  }
};

// Share returns the first key and count of server rank's share of a space
// of 2^bits keys under ps-lite's ranges, as keys of that space.
void Share(int rank, int bits, uint64_t* first, size_t* n) {
  const Range& r = Postoffice::Get()->GetServerKeyRanges()[rank];
  int shift = 64 - bits;
  uint64_t unit = 1ULL << shift;
  uint64_t lo = r.begin() / unit + (r.begin() % unit != 0);
  uint64_t hi = r.end() / unit + (r.end() % unit != 0);
  hi = std::min<uint64_t>(hi, 1ULL << bits);
  *first = lo;
  *n = hi - lo;
}

void StartServer(int dense_vals, Kinds* kinds) {
  if (!IsServer()) return;
  int rank = MyRank();
  auto* sparse = new SparseStore();
  sparse->kinds = kinds;
  sparse->shift = 64 - kSparseSpaceBits;
  Share(rank, kSparseSpaceBits, &sparse->first, &sparse->n);
  sparse->vals = HugeArray(sparse->n);
  auto* dense = new DenseStore();
  dense->kinds = kinds;
  uint64_t first;
  Share(rank, Log2(dense_vals), &first, &dense->n);
  dense->n = std::min<uint64_t>(dense->n, first < (uint64_t)dense_vals ? dense_vals - first : 0);
  dense->vals = HugeArray(dense->n);
  auto* s0 = new KVServer<float>(0);
  s0->set_request_handle([sparse](const KVMeta& m, const KVPairs<float>& r, KVServer<float>* s) {
    sparse->Handle(m, r, s);
  });
  auto* s1 = new KVServer<float>(1);
  s1->set_request_handle([dense](const KVMeta& m, const KVPairs<float>& r, KVServer<float>* s) {
    dense->Handle(m, r, s);
  });
  RegisterExitCallback([s0, s1]() {
    delete s0;
    delete s1;
  });
}

typedef std::chrono::steady_clock Clock;

// Measure runs one kind: a warm-up request, then requests one at a time
// for the duration, and prints the worker's line.
template <typename Call>
void Measure(const char* mode, const char* op, size_t keys, int ms, Call call) {
  Postoffice::Get()->Barrier(0, kWorkerGroup);
  call(kWarmUp);
  Postoffice::Get()->Barrier(0, kWorkerGroup);
  int64_t cpu = CPUNanos();
  std::vector<int64_t> lat;
  auto begin = Clock::now();
  while (Clock::now() - begin < std::chrono::milliseconds(ms)) {
    auto t = Clock::now();
    call(0);
    lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
  }
  cpu = CPUNanos() - cpu;
  std::string line = "{\"rank\":" + std::to_string(MyRank()) + ",\"mode\":\"" + mode +
                     "\",\"op\":\"" + op + "\",\"keys\":" + std::to_string(keys) +
                     ",\"cpu_ns\":" + std::to_string(cpu) + ",\"lat_ns\":[";
  for (size_t i = 0; i < lat.size(); ++i) {
    if (i) line += ",";
    line += std::to_string(lat[i]);
  }
  line += "]}\n";
  fwrite(line.data(), 1, line.size(), stdout);
  fflush(stdout);
}

// Check exits with an error unless every value pulled is the same
// positive count of pushes.
void Check(const char* mode, const SArray<float>& got) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] < 1 || got[i] != got[0]) {
      fprintf(stderr, "kv_bench: %s pull: value %zu is %g, value 0 is %g: want one positive count of pushes\n",
              mode, i, got[i], got[0]);
      exit(1);
    }
  }
}

void RunWorker(int ms, int sparse_keys, int dense_vals, const std::string& kinds) {
  if (!IsWorker()) return;
  auto want = [&kinds](const char* k) { return kinds.find(k) != std::string::npos; };
  KVWorker<float> sparse(0, 0);
  KVWorker<float> dense(1, 1);

  std::vector<uint64_t> set = SparseKeySet(sparse_keys);
  SArray<Key> skeys(set.size());
  for (size_t i = 0; i < set.size(); ++i) skeys[i] = set[i] << (64 - kSparseSpaceBits);
  SArray<float> svals(set.size(), 1.0f), sout(set.size());

  int n = NumServers();
  int bits = Log2(dense_vals);
  SArray<Key> dkeys;
  SArray<int> dlens;
  for (int r = 0; r < n; ++r) {
    uint64_t first;
    size_t cnt;
    Share(r, bits, &first, &cnt);
    if (first >= (uint64_t)dense_vals) continue;
    cnt = std::min<uint64_t>(cnt, dense_vals - first);
    dkeys.push_back(first << (64 - bits));
    dlens.push_back((int)cnt);
  }
  SArray<float> dvals(dense_vals, 1.0f), dout(dense_vals);
  SArray<int> doutlens(dkeys.size());

  if (want("sparse-push"))
    Measure("sparse", "push", set.size(), ms, [&](int cmd) { sparse.Wait(sparse.ZPush(skeys, svals, {}, cmd)); });
  if (want("sparse-pull"))
    Measure("sparse", "pull", set.size(), ms, [&](int cmd) { sparse.Wait(sparse.ZPull(skeys, &sout, nullptr, cmd)); });
  if (want("dense-push"))
    Measure("dense", "push", dense_vals, ms, [&](int cmd) { dense.Wait(dense.ZPush(dkeys, dvals, dlens, cmd)); });
  if (want("dense-pull"))
    Measure("dense", "pull", dense_vals, ms, [&](int cmd) { dense.Wait(dense.ZPull(dkeys, &dout, &doutlens, cmd)); });
  // Every key was pushed as often as every other, by every worker: a pull
  // after the pushes answers one positive count everywhere.
  if (want("sparse-push") && want("sparse-pull")) Check("sparse", sout);
  if (want("dense-push") && want("dense-pull")) Check("dense", dout);
}

}  // namespace

int main(int argc, char* argv[]) {
  int sparse_keys = EnvInt("KV_SPARSE_KEYS", 100000);
  if (argc > 1 && std::string(argv[1]) == "keysum") {
    std::vector<uint64_t> k = SparseKeySet(sparse_keys);
    uint64_t sum = 0;
    for (uint64_t x : k) sum += x;
    printf("%zu %llu %llu %llu\n", k.size(), (unsigned long long)k.front(),
           (unsigned long long)k.back(), (unsigned long long)sum);
    return 0;
  }
  int ms = EnvInt("KV_DURATION_MS", 1000);
  int dense_vals = EnvInt("KV_DENSE_VALS", 1 << 20);
  if (dense_vals & (dense_vals - 1)) {
    fprintf(stderr, "kv_bench: KV_DENSE_VALS=%d: want a power of two\n", dense_vals);
    return 2;
  }
  if (sparse_keys > (1 << (kSparseSpaceBits - 1))) {
    fprintf(stderr, "kv_bench: KV_SPARSE_KEYS=%d: want at most 2^23\n", sparse_keys);
    return 2;
  }
  const char* k = getenv("KV_KINDS");
  std::string kinds = k && *k ? k : "sparse-push,sparse-pull,dense-push,dense-pull";
  Kinds server_cpu;
  Start(0);
  bool server = IsServer();
  int rank = server ? MyRank() : -1;
  StartServer(dense_vals, &server_cpu);
  RunWorker(ms, sparse_keys, dense_vals, kinds);
  Finalize(0, true);
  if (server) {
    std::string line = server_cpu.Line(rank);
    fwrite(line.data(), 1, line.size(), stdout);
    fflush(stdout);
  }
  return 0;
}
