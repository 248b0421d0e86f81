/* The collective table and its reference (colls.h). Public header only. */
#include "colls.h"

#include "data.h"

#include <math.h>
#include <string.h>

const collInfo collTable[COLL_NUM] = {
    [COLL_ALLGATHER] = {"allgather", "allgather", "dmacclAllGather", COLL_IN_PLACE, COLL_BW_NM1},
    [COLL_ALLTOALL] = {"alltoall", "alltoall", "dmacclAlltoAll", 0, COLL_BW_NM1},
    [COLL_ALLREDUCE] = {"allreduce", "allreduce", "dmacclAllReduce", COLL_REDUCES | COLL_IN_PLACE,
                        COLL_BW_2NM1},
    [COLL_REDUCESCATTER] = {"reducescatter", "reducescatter", "dmacclReduceScatter",
                            COLL_REDUCES | COLL_IN_PLACE, COLL_BW_NM1},
    [COLL_BROADCAST] = {"broadcast", "broadcast", "dmacclBroadcast", COLL_ROOTED | COLL_IN_PLACE,
                        COLL_BW_ONE},
    [COLL_REDUCE] = {"reduce", "reduce", "dmacclReduce", COLL_REDUCES | COLL_ROOTED | COLL_IN_PLACE,
                     COLL_BW_ONE},
    [COLL_GATHER] = {"gather", "gather", "dmacclGather", COLL_ROOTED | COLL_IN_PLACE, COLL_BW_NM1},
    [COLL_SCATTER] = {"scatter", "scatter", "dmacclScatter", COLL_ROOTED | COLL_IN_PLACE,
                      COLL_BW_NM1},
    [COLL_ALLGATHERV] = {"allgatherv", "allgatherv", "dmacclAllGatherV",
                         COLL_VECTOR | COLL_IN_PLACE, COLL_BW_NM1},
    [COLL_REDUCESCATTERV] = {"reducescatterv", "reducescatterv", "dmacclReduceScatterV",
                             COLL_REDUCES | COLL_VECTOR | COLL_IN_PLACE, COLL_BW_NM1},
    [COLL_ALLTOALLV] = {"alltoallv", "alltoallv", "dmacclAlltoAllv", COLL_VECTOR, COLL_BW_NM1},
    /* nccl-tests' sendrecv_perf: a ring of Send/Recv; a 2-rank Broadcast per
     * channel in the library, so Broadcast's selection entry applies */
    [COLL_SENDRECV] = {"sendrecv", "broadcast", "dmacclSend/dmacclRecv", COLL_P2P, COLL_BW_ONE},
};

int collByName(const char *name) {
  for (int c = 0; c < COLL_NUM; c++)
    if (name && strcmp(name, collTable[c].name) == 0) return c;
  return -1;
}

int collMinRanks(collId c) {
  return (unsigned)c < COLL_NUM && (collTable[c].flags & COLL_P2P) ? 2 : 1;
}

int collRequests(collId c) {
  return c == COLL_SENDRECV ? 2 : 1;
}

/* --- types and ops ----------------------------------------------------------- */

size_t collTypeSize(dmacclDataType_t t) {
  switch (t) {
  case dmacclInt8:
  case dmacclUint8:
  case dmacclFloat8e4m3:
  case dmacclFloat8e5m2: return 1;
  case dmacclFloat16:
  case dmacclBfloat16: return 2;
  case dmacclInt32:
  case dmacclUint32:
  case dmacclFloat32: return 4;
  case dmacclInt64:
  case dmacclUint64:
  case dmacclFloat64: return 8;
  default: return 0;
  }
}

const char *collTypeName(dmacclDataType_t t) {
  static const char *const names[dmacclNumTypes] = {[dmacclInt8] = "int8",
                                                    [dmacclUint8] = "uint8",
                                                    [dmacclInt32] = "int32",
                                                    [dmacclUint32] = "uint32",
                                                    [dmacclInt64] = "int64",
                                                    [dmacclUint64] = "uint64",
                                                    [dmacclFloat16] = "float16",
                                                    [dmacclFloat32] = "float32",
                                                    [dmacclFloat64] = "float64",
                                                    [dmacclBfloat16] = "bfloat16",
                                                    [dmacclFloat8e4m3] = "float8e4m3",
                                                    [dmacclFloat8e5m2] = "float8e5m2"};
  return (unsigned)t < dmacclNumTypes ? names[t] : "?";
}

const char *collOpName(dmacclRedOp_t op) {
  static const char *const names[COLL_NUM_OPS] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return (unsigned)op < COLL_NUM_OPS ? names[op] : "?";
}

int collTypeIsFloat(dmacclDataType_t t) {
  return t == dmacclFloat16 || t == dmacclFloat32 || t == dmacclFloat64 || t == dmacclBfloat16 ||
         t == dmacclFloat8e4m3 || t == dmacclFloat8e5m2;
}

int collOpSupported(dmacclDataType_t t, dmacclRedOp_t op) {
  if (collTypeSize(t) == 0 || (unsigned)op >= COLL_NUM_OPS) return 0;
  return op != dmacclAvg || collTypeIsFloat(t);
}

/* --- sizes ---------------------------------------------------------------------- */

/* End of the last non-empty block, in elements. */
static size_t extent(const size_t *cnt, const size_t *disp, int n) {
  size_t end = 0;
  for (int i = 0; i < n; i++)
    if (cnt[i] && disp[i] + cnt[i] > end) end = disp[i] + cnt[i];
  return end;
}

static size_t sum(const size_t *cnt, int n) {
  size_t t = 0;
  for (int i = 0; i < n; i++) t += cnt[i];
  return t;
}

size_t collSendCount(collId c, const collShape *s, int rank) {
  size_t n = (size_t)s->nranks;
  switch (c) {
  case COLL_ALLGATHER:
  case COLL_ALLREDUCE:
  case COLL_REDUCE:
  case COLL_GATHER:
  case COLL_SENDRECV: return s->count;
  case COLL_ALLTOALL:
  case COLL_REDUCESCATTER: return n * s->count;
  case COLL_BROADCAST: return rank == s->root ? s->count : 0;
  case COLL_SCATTER: return rank == s->root ? n * s->count : 0;
  case COLL_ALLGATHERV: return s->counts[rank];
  case COLL_REDUCESCATTERV: return extent(s->counts, s->displs, s->nranks);
  case COLL_ALLTOALLV:
    return extent(s->sendcounts + (size_t)rank * n, s->sdispls + (size_t)rank * n, s->nranks);
  default: return 0;
  }
}

size_t collRecvCount(collId c, const collShape *s, int rank) {
  size_t n = (size_t)s->nranks;
  switch (c) {
  case COLL_ALLGATHER:
  case COLL_ALLTOALL: return n * s->count;
  case COLL_ALLREDUCE:
  case COLL_REDUCESCATTER:
  case COLL_BROADCAST:
  case COLL_SCATTER:
  case COLL_SENDRECV: return s->count;
  case COLL_REDUCE: return rank == s->root ? s->count : 0;
  case COLL_GATHER: return rank == s->root ? n * s->count : 0;
  case COLL_ALLGATHERV: return extent(s->counts, s->displs, s->nranks);
  case COLL_REDUCESCATTERV: return s->counts[rank];
  case COLL_ALLTOALLV:
    return extent(s->recvcounts + (size_t)rank * n, s->rdispls + (size_t)rank * n, s->nranks);
  default: return 0;
  }
}

int collInPlace(collId c, const collShape *s, int rank, long long *delta) {
  long long count = (long long)s->count, me = rank, root = s->root;
  *delta = 0;
  switch (c) {
  case COLL_ALLGATHER: *delta = me * count; return 1;
  case COLL_REDUCESCATTER: *delta = -me * count; return 1;
  case COLL_ALLREDUCE:
  case COLL_BROADCAST:
  case COLL_REDUCE: return 1;
  case COLL_GATHER: *delta = rank == s->root ? root * count : 0; return 1;
  case COLL_SCATTER: *delta = rank == s->root ? -root * count : 0; return 1;
  case COLL_ALLGATHERV: *delta = (long long)s->displs[rank]; return 1;
  case COLL_REDUCESCATTERV: *delta = -(long long)s->displs[rank]; return 1;
  default: return 0;
  }
}

size_t collSizeBytes(collId c, const collShape *s, int rank, size_t typeSize) {
  size_t n = (size_t)s->nranks;
  switch (c) {
  case COLL_ALLREDUCE:
  case COLL_BROADCAST:
  case COLL_REDUCE:
  case COLL_SENDRECV: return s->count * typeSize;
  case COLL_ALLGATHER:
  case COLL_ALLTOALL:
  case COLL_REDUCESCATTER:
  case COLL_GATHER:
  case COLL_SCATTER: return n * s->count * typeSize;
  case COLL_ALLGATHERV:
  case COLL_REDUCESCATTERV: return sum(s->counts, s->nranks) * typeSize;
  case COLL_ALLTOALLV: return sum(s->sendcounts + (size_t)rank * n, s->nranks) * typeSize;
  default: return 0;
  }
}

double collBusBwFactor(collId c, int nranks) {
  if ((unsigned)c >= COLL_NUM || nranks < 1) return 0;
  double n = nranks;
  switch (collTable[c].bw) {
  case COLL_BW_ONE: return 1;
  case COLL_BW_2NM1: return 2 * (n - 1) / n;
  default: return (n - 1) / n;
  }
}

/* --- the call ------------------------------------------------------------------- */

/* --- the arithmetic (dmacclRedOp_t's comment) ---------------------------------- */

/* The small floating-point formats: E exponent bits, M mantissa bits, bias
 * 2^(E-1)-1. inf: the all-ones exponent is Inf/NaN (else only all ones is
 * NaN: e4m3). sat: overflow gives the largest finite value (fp8). */
typedef struct {
  int E, M, inf, sat;
} smallFmt;

static const smallFmt fmtHalf = {5, 10, 1, 0}, fmtBf16 = {8, 7, 1, 0}, fmtE4m3 = {4, 3, 0, 1},
                      fmtE5m2 = {5, 2, 1, 1};

static int bias(const smallFmt *f) {
  return (1 << (f->E - 1)) - 1;
}
static uint32_t maxBits(const smallFmt *f) {
  uint32_t expOnes = (1u << f->E) - 1u, manOnes = (1u << f->M) - 1u;
  return f->inf ? ((expOnes - 1u) << f->M) | manOnes : (expOnes << f->M) | (manOnes - 1u);
}

/* The value of a bit pattern, from its fields. */
static double smallDecode(const smallFmt *f, uint32_t b) {
  uint32_t expOnes = (1u << f->E) - 1u, manOnes = (1u << f->M) - 1u;
  uint32_t sign = (b >> (f->E + f->M)) & 1u, e = (b >> f->M) & expOnes, m = b & manOnes;
  double v;
  if (e == expOnes && f->inf)
    v = m ? NAN : INFINITY;
  else if (e == expOnes && m == manOnes)
    v = NAN;
  else if (e == 0)
    v = ldexp((double)m, 1 - bias(f) - f->M);
  else
    v = ldexp((double)(m + (1u << f->M)), (int)e - bias(f) - f->M);
  return sign ? -v : v;
}

/* The nearest representable value, ties to even, as bits; beyond the
 * largest finite value Inf, or that value where the format saturates or has
 * no Inf. v must not be NaN. */
static uint32_t smallEncode(const smallFmt *f, double v) {
  uint32_t sign = signbit(v) ? 1u : 0u, mag;
  uint32_t infBits = ((1u << f->E) - 1u) << f->M;
  uint32_t over = f->sat || !f->inf ? maxBits(f) : infBits;
  double a = fabs(v), largest = smallDecode(f, maxBits(f));
  if (isinf(a)) {
    mag = over;
  } else if (a == 0) {
    mag = 0;
  } else {
    int ex = 0;
    frexp(a, &ex);
    int e = ex - 1, emin = 1 - bias(f); /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;             /* subnormal: the quantum of the smallest normal */
    double scaled = ldexp(a, f->M - e), m = floor(scaled), frac = scaled - m;
    if (frac > 0.5 || (frac == 0.5 && fmod(m, 2.0) == 1.0)) m += 1;
    if (ldexp(m, e - f->M) > largest) {
      mag = over;
    } else {
      uint32_t q = (uint32_t)m;
      if (q == (2u << f->M)) q >>= 1, e++; /* rounded up to the next power of two */
      if (q >= (1u << f->M))
        mag = ((uint32_t)(e + bias(f)) << f->M) | (q - (1u << f->M));
      else
        mag = q; /* subnormal (e == emin) */
    }
  }
  return (sign << (f->E + f->M)) | mag;
}

static const smallFmt *smallOf(dmacclDataType_t t) {
  switch (t) {
  case dmacclFloat16: return &fmtHalf;
  case dmacclBfloat16: return &fmtBf16;
  case dmacclFloat8e4m3: return &fmtE4m3;
  case dmacclFloat8e5m2: return &fmtE5m2;
  default: return NULL;
  }
}

static uint64_t loadU(const unsigned char *p, size_t sz) {
  uint8_t a;
  uint16_t b;
  uint32_t c;
  uint64_t d;
  switch (sz) {
  case 1: memcpy(&a, p, 1); return a;
  case 2: memcpy(&b, p, 2); return b;
  case 4: memcpy(&c, p, 4); return c;
  default: memcpy(&d, p, 8); return d;
  }
}
static int64_t loadS(const unsigned char *p, size_t sz) {
  int8_t a;
  int32_t c;
  int64_t d;
  switch (sz) {
  case 1: memcpy(&a, p, 1); return a;
  case 4: memcpy(&c, p, 4); return c;
  default: memcpy(&d, p, 8); return d;
  }
}
static void storeU(unsigned char *p, size_t sz, uint64_t v) {
  uint8_t a = (uint8_t)v;
  uint16_t b = (uint16_t)v;
  uint32_t c = (uint32_t)v;
  switch (sz) {
  case 1: memcpy(p, &a, 1); break;
  case 2: memcpy(p, &b, 2); break;
  case 4: memcpy(p, &c, 4); break;
  default: memcpy(p, &v, 8); break;
  }
}

void collPremulScalar(dmacclDataType_t t, void *out) {
  const smallFmt *f = smallOf(t);
  size_t sz = collTypeSize(t);
  if (t == dmacclFloat32) {
    float v = 0.3f;
    memcpy(out, &v, 4);
  } else if (t == dmacclFloat64) {
    double v = 0.3;
    memcpy(out, &v, 8);
  } else if (f) {
    storeU(out, sz, smallEncode(f, 0.3));
  } else if (sz) {
    storeU(out, sz, (uint64_t)-3); /* truncated: -3 in the width */
  }
}

/* One element: out = src[0][i] op src[1][i] op ... in rank order (the
 * premultiplied sum: the sum times collPremulScalar). */
static int reduceElem(dmacclDataType_t t, dmacclRedOp_t op, int n, const unsigned char *const *src,
                      size_t i, unsigned char *out) {
  size_t sz = collTypeSize(t), at = i * sz;
  const smallFmt *f = smallOf(t);
  unsigned char scalar[8] = {0};
  if (op == COLL_PREMULSUM) collPremulScalar(t, scalar);
  if (t == dmacclFloat32) {
    float acc, x;
    memcpy(&acc, src[0] + at, 4);
    for (int r = 1; r < n; r++) {
      memcpy(&x, src[r] + at, 4);
      if (op == dmacclProd)
        acc = acc * x;
      else if (op == dmacclMax)
        acc = x > acc ? x : acc;
      else if (op == dmacclMin)
        acc = x < acc ? x : acc;
      else
        acc = acc + x;
    }
    if (op == dmacclAvg) acc = acc / (float)n;
    if (op == COLL_PREMULSUM) {
      float m;
      memcpy(&m, scalar, 4);
      acc = acc * m;
    }
    if (isnan(acc)) return -1;
    memcpy(out, &acc, 4);
  } else if (t == dmacclFloat64) {
    double acc, x;
    memcpy(&acc, src[0] + at, 8);
    for (int r = 1; r < n; r++) {
      memcpy(&x, src[r] + at, 8);
      if (op == dmacclProd)
        acc = acc * x;
      else if (op == dmacclMax)
        acc = x > acc ? x : acc;
      else if (op == dmacclMin)
        acc = x < acc ? x : acc;
      else
        acc = acc + x;
    }
    if (op == dmacclAvg) acc = acc / (double)n;
    if (op == COLL_PREMULSUM) {
      double m;
      memcpy(&m, scalar, 8);
      acc = acc * m;
    }
    if (isnan(acc)) return -1;
    memcpy(out, &acc, 8);
  } else if (f) {
    /* in float (every value of these formats is exact in float), one rounding */
    float acc = (float)smallDecode(f, (uint32_t)loadU(src[0] + at, sz)), x;
    for (int r = 1; r < n; r++) {
      x = (float)smallDecode(f, (uint32_t)loadU(src[r] + at, sz));
      if (op == dmacclProd)
        acc = acc * x;
      else if (op == dmacclMax)
        acc = x > acc ? x : acc;
      else if (op == dmacclMin)
        acc = x < acc ? x : acc;
      else
        acc = acc + x;
    }
    if (op == dmacclAvg) acc = acc / (float)n;
    if (op == COLL_PREMULSUM) acc = acc * (float)smallDecode(f, (uint32_t)loadU(scalar, sz));
    if (isnan(acc)) return -1;
    storeU(out, sz, smallEncode(f, (double)acc));
  } else {
    /* integers: Sum and Prod modulo 2^64, truncated to the width, which is
     * wrap-around in the width; Max and Min compare as the type */
    int sgn = t == dmacclInt8 || t == dmacclInt32 || t == dmacclInt64;
    uint64_t acc = loadU(src[0] + at, sz);
    int64_t accS = sgn ? loadS(src[0] + at, sz) : 0;
    for (int r = 1; r < n; r++) {
      uint64_t x = loadU(src[r] + at, sz);
      int64_t xs = sgn ? loadS(src[r] + at, sz) : 0;
      int more = sgn ? xs > accS : x > acc, less = sgn ? xs < accS : x < acc;
      if (op == dmacclSum || op == COLL_PREMULSUM)
        acc = acc + x;
      else if (op == dmacclProd)
        acc = acc * x;
      else if ((op == dmacclMax && more) || (op == dmacclMin && less))
        acc = x, accS = xs;
    }
    if (op == COLL_PREMULSUM) acc = acc * loadU(scalar, sz); /* modulo 2^64, then the width */
    storeU(out, sz, acc);
  }
  return 0;
}

static int reduceInto(unsigned char *out, const unsigned char *const *src, int n, size_t count,
                      dmacclDataType_t t, dmacclRedOp_t op) {
  size_t sz = collTypeSize(t);
  for (size_t i = 0; i < count; i++)
    if (reduceElem(t, op, n, src, i, out + i * sz)) return -1;
  return 0;
}

static void copyBytes(unsigned char *dst, const void *src, size_t bytes) {
  if (bytes) memcpy(dst, src, bytes);
}

int collReference(collId c, const collShape *s, int rank, dmacclDataType_t t, dmacclRedOp_t op,
                  const void *const *sends, void *recv) {
  size_t ts = collTypeSize(t), cnt = s->count, n = (size_t)s->nranks;
  int nr = s->nranks, root = s->root;
  unsigned char *out = recv;
  const unsigned char *src[COLL_MAX_RANKS];
  if (!ts || (unsigned)c >= COLL_NUM || nr < collMinRanks(c) || nr > COLL_MAX_RANKS) return -1;
  if ((collTable[c].flags & COLL_REDUCES) && !collOpSupported(t, op)) return -1;
  const unsigned char *const *in = (const unsigned char *const *)sends;
  size_t me = (size_t)rank;
  switch (c) {
  case COLL_ALLGATHER:
    for (size_t f = 0; f < n; f++) copyBytes(out + f * cnt * ts, in[f], cnt * ts);
    return 0;
  case COLL_ALLTOALL:
    for (size_t f = 0; f < n; f++)
      if (cnt) copyBytes(out + f * cnt * ts, in[f] + me * cnt * ts, cnt * ts);
    return 0;
  case COLL_ALLREDUCE:
  case COLL_REDUCE:
  case COLL_REDUCESCATTER:
    if (!cnt || (c == COLL_REDUCE && rank != root)) return 0;
    for (int f = 0; f < nr; f++) src[f] = in[f] + (c == COLL_REDUCESCATTER ? me * cnt * ts : 0);
    return reduceInto(out, src, nr, cnt, t, op);
  case COLL_BROADCAST: copyBytes(out, in[root], cnt * ts); return 0;
  case COLL_GATHER:
    if (rank == root)
      for (size_t f = 0; f < n; f++) copyBytes(out + f * cnt * ts, in[f], cnt * ts);
    return 0;
  case COLL_SCATTER:
    if (cnt) copyBytes(out, in[root] + me * cnt * ts, cnt * ts);
    return 0;
  case COLL_ALLGATHERV:
    for (size_t f = 0; f < n; f++) copyBytes(out + s->displs[f] * ts, in[f], s->counts[f] * ts);
    return 0;
  case COLL_REDUCESCATTERV:
    if (!s->counts[rank]) return 0;
    for (int f = 0; f < nr; f++) src[f] = in[f] + s->displs[rank] * ts;
    return reduceInto(out, src, nr, s->counts[rank], t, op);
  case COLL_ALLTOALLV:
    for (size_t f = 0; f < n; f++) {
      size_t got = s->recvcounts[me * n + f], sent = s->sendcounts[f * n + me];
      if (got != sent) return -1;
      if (got)
        copyBytes(out + s->rdispls[me * n + f] * ts, in[f] + s->sdispls[f * n + me] * ts, got * ts);
    }
    return 0;
  case COLL_SENDRECV: copyBytes(out, in[(rank - 1 + nr) % nr], cnt * ts); return 0;
  default: return -1;
  }
}

void collSanitize(dmacclDataType_t t, void *buf, size_t count) {
  size_t sz = collTypeSize(t);
  const smallFmt *f = smallOf(t);
  unsigned char *p = buf;
  if (!collTypeIsFloat(t)) return;
  /* E exponent bits above M mantissa bits; the sign on top */
  int E = f ? f->E : t == dmacclFloat32 ? 8 : 11, M = f ? f->M : t == dmacclFloat32 ? 23 : 52;
  uint64_t expMask = (((uint64_t)1 << E) - 1) << M, manMask = ((uint64_t)1 << M) - 1;
  for (size_t i = 0; i < count; i++) {
    uint64_t b = loadU(p + i * sz, sz);
    int special = (b & expMask) == expMask && (!f || f->inf || (b & manMask) == manMask);
    if (special) b &= ~((uint64_t)1 << (E + M - 1)); /* top exponent bit off: finite */
    if ((b & (expMask | manMask)) == 0) b |= 1;      /* +-0: the smallest subnormal */
    storeU(p + i * sz, sz, b);
  }
}

/* --- random V layouts ------------------------------------------------------------ */

static size_t randBelow(uint64_t *st, size_t bound) {
  return bound ? (size_t)(dataRand(st) % bound) : 0;
}

static size_t randCount(uint64_t *st, size_t maxCount) {
  if (randBelow(st, 4) == 0) return 0;
  return randBelow(st, maxCount + 1);
}

/* Displacements for k blocks: non-empty ones in a random order with random
 * gaps (often none), empty ones anywhere up to the end. */
static void layout(const size_t *cnt, size_t *disp, int k, uint64_t *st) {
  int perm[COLL_MAX_RANKS];
  for (int i = 0; i < k; i++) perm[i] = i;
  for (int i = k - 1; i > 0; i--) {
    int j = (int)randBelow(st, (size_t)i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  size_t pos = 0;
  for (int x = 0; x < k; x++) {
    int i = perm[x];
    if (!cnt[i]) continue;
    pos += randBelow(st, 3) == 0 ? 0 : randBelow(st, 5);
    disp[i] = pos;
    pos += cnt[i];
  }
  for (int i = 0; i < k; i++)
    if (!cnt[i]) disp[i] = randBelow(st, pos + 1);
}

void collRandomV(collShape *s, collVArrays *v, int nranks, size_t maxCount, uint64_t seed) {
  uint64_t st = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  int n = nranks < 1 ? 1 : nranks > COLL_MAX_RANKS ? COLL_MAX_RANKS : nranks;
  size_t N = (size_t)n;
  memset(v, 0, sizeof(*v));
  for (int i = 0; i < n; i++) v->counts[i] = randCount(&st, maxCount);
  if (n > 1 && randBelow(&st, 2)) v->counts[randBelow(&st, N)] = 0; /* a rank with nothing */
  layout(v->counts, v->displs, n, &st);
  /* AlltoAllv: m[i][j] elements from i to j, kept in sendcounts */
  for (size_t i = 0; i < N * N; i++) v->sendcounts[i] = randCount(&st, maxCount);
  if (n > 1 && randBelow(&st, 2)) { /* a rank that sends nothing */
    size_t z = randBelow(&st, N);
    for (size_t j = 0; j < N; j++) v->sendcounts[z * N + j] = 0;
  }
  if (n > 1 && randBelow(&st, 2)) { /* a rank that receives nothing */
    size_t z = randBelow(&st, N);
    for (size_t i = 0; i < N; i++) v->sendcounts[i * N + z] = 0;
  }
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) v->recvcounts[j * N + i] = v->sendcounts[i * N + j];
  for (size_t r = 0; r < N; r++) {
    layout(v->sendcounts + r * N, v->sdispls + r * N, n, &st);
    layout(v->recvcounts + r * N, v->rdispls + r * N, n, &st);
  }
  s->nranks = n;
  s->counts = v->counts;
  s->displs = v->displs;
  s->sendcounts = v->sendcounts;
  s->sdispls = v->sdispls;
  s->recvcounts = v->recvcounts;
  s->rdispls = v->rdispls;
}
