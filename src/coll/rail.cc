#include "coll/rail.h"

#include <cstring>

#include "ucx/transport.h"

namespace gcoll {

void part_range(std::size_t n, int parts, int i, std::size_t *off, std::size_t *len) {
  const std::size_t base = n / parts, extra = n % parts, k = static_cast<std::size_t>(i);
  *off = k * base + (k < extra ? k : extra);
  *len = base + (k < extra ? 1 : 0);
}

int rd_steps(int n) {
  int p = 1, k = 0;
  while (p * 2 <= n) {
    p *= 2;
    ++k;
  }
  return k + (p == n ? 0 : 2);
}

namespace {

char *at(void *p, std::size_t off) { return static_cast<char *>(p) + off; }

void count_step(Rail &r) {
  if (r.steps) ++*r.steps;
}

Status exchange(Rail &r, int dst, const void *s, std::size_t sb, int src, void *d, std::size_t db, int step) {
  count_step(r);
  return r.group->sendrecv(dst, s, sb, src, d, db, r.tag(step), r.timeout_s);
}

Status send_only(Rail &r, int dst, const void *s, std::size_t sb, int step) {
  count_step(r);
  ucx::Request req;
  Status st = r.group->isend(dst, s, sb, r.tag(step), &req);
  return ok(st) ? r.group->wait(&req, 1, r.timeout_s) : st;
}

Status recv_only(Rail &r, int src, void *d, std::size_t db, int step) {
  count_step(r);
  ucx::Request req;
  Status st = r.group->irecv(src, d, db, r.tag(step), &req);
  return ok(st) ? r.group->wait(&req, 1, r.timeout_s) : st;
}

// buf = op(buf, other), element-wise.
Status combine(Rail &r, DType t, ROp op, void *buf, const void *other, std::size_t count) {
  const void *srcs[2] = {buf, other};
  return r.space->reduce(t, op, buf, srcs, 2, count);
}

}  // namespace

Status rail_allreduce_ring(Rail &r, DType t, ROp op, void *buf, std::size_t count, std::size_t elem, void *tmp) {
  const int n = r.group->size(), me = r.group->rank();
  if (n == 1 || count == 0) return Status::Ok;
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  int step = 0;
  // Reduce-scatter: after n-1 steps I hold the full reduction of part (me + 1) % n.
  for (int s = 0; s < n - 1; ++s, ++step) {
    std::size_t so, sl, ro, rl;
    part_range(count, n, (me - s + n) % n, &so, &sl);
    part_range(count, n, (me - s - 1 + 2 * n) % n, &ro, &rl);
    Status st = exchange(r, right, at(buf, so * elem), sl * elem, left, tmp, rl * elem, step);
    if (ok(st)) st = combine(r, t, op, at(buf, ro * elem), tmp, rl);
    if (!ok(st)) return st;
  }
  // Allgather: pass the finished parts around the ring.
  for (int s = 0; s < n - 1; ++s, ++step) {
    std::size_t so, sl, ro, rl;
    part_range(count, n, (me + 1 - s + n) % n, &so, &sl);
    part_range(count, n, (me - s + n) % n, &ro, &rl);
    Status st = exchange(r, right, at(buf, so * elem), sl * elem, left, at(buf, ro * elem), rl * elem, step);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

Status rail_allreduce_rd(Rail &r, DType t, ROp op, void *buf, std::size_t count, std::size_t elem, void *tmp) {
  const int n = r.group->size(), me = r.group->rank();
  if (n == 1 || count == 0) return Status::Ok;
  const std::size_t bytes = count * elem;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;  // ranks 0 .. 2*extra-1 pair up: odd ones carry on, even ones wait
  int step = 0;
  Status st = Status::Ok;
  // Fold: even rank 2i (< 2*extra) hands its data to 2i+1 and sits out.
  int vrank;
  if (me < 2 * extra) {
    if (me % 2 == 0) {
      st = send_only(r, me + 1, buf, bytes, step);
      vrank = -1;
    } else {
      st = recv_only(r, me - 1, tmp, bytes, step);
      if (ok(st)) st = combine(r, t, op, buf, tmp, count);
      vrank = me / 2;
    }
  } else {
    vrank = me - extra;
  }
  if (!ok(st)) return st;
  ++step;
  const auto real = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  // Recursive doubling among the p remaining ranks (steps 1 .. log2 p).
  for (int mask = 1; vrank >= 0 && mask < p; mask <<= 1) {
    const int partner = real(vrank ^ mask);
    st = exchange(r, partner, buf, bytes, partner, tmp, bytes, step++);
    if (ok(st)) st = combine(r, t, op, buf, tmp, count);
    if (!ok(st)) return st;
  }
  step = 1 + rd_steps(p);  // the same unfold tag on ranks that sat out
  // Unfold: the folded-in ranks get the result back.
  if (me < 2 * extra) {
    if (me % 2 == 1) st = send_only(r, me - 1, buf, bytes, step);
    else st = recv_only(r, me + 1, buf, bytes, step);
  }
  return st;
}

Status rail_bcast_binomial(Rail &r, void *buf, std::size_t bytes, int root) {
  const int n = r.group->size(), me = r.group->rank();
  if (n == 1) return Status::Ok;
  const int rel = (me - root + n) % n;
  // Receive from the parent (clear lowest set bit of rel), then send to children.
  int mask = 1;
  while (mask < n && !(rel & mask)) mask <<= 1;
  if (rel != 0) {
    const int parent = ((rel & ~mask) + root) % n;
    Status st = recv_only(r, parent, buf, bytes, 0);
    if (!ok(st)) return st;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (rel + mask < n) {
      Status st = send_only(r, (rel + mask + root) % n, buf, bytes, 0);
      if (!ok(st)) return st;
    }
  }
  return Status::Ok;
}

Status rail_allgatherv_ring(Rail &r, const std::vector<std::size_t> &sizes, void *out) {
  const int n = r.group->size(), me = r.group->rank();
  std::vector<std::size_t> off(n + 1, 0);
  for (int i = 0; i < n; ++i) off[i + 1] = off[i] + sizes[i];
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  for (int s = 0; s < n - 1; ++s) {
    const int si = (me - s + n) % n, ri = (me - s - 1 + 2 * n) % n;
    Status st = exchange(r, right, at(out, off[si]), sizes[si], left, at(out, off[ri]), sizes[ri], s);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

Status rail_allgatherv_bruck(Rail &r, const std::vector<std::size_t> &sizes, void *out, void *tmp) {
  const int n = r.group->size(), me = r.group->rank();
  if (n == 1) return Status::Ok;
  // tmp holds pieces in relative order: position i is rail rank (me + i) % n.
  std::vector<std::size_t> roff(n + 1, 0), off(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    roff[i + 1] = roff[i] + sizes[(me + i) % n];
    off[i + 1] = off[i] + sizes[i];
  }
  std::memcpy(tmp, at(out, off[me]), sizes[me]);
  int step = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++step) {
    const int cnt = dist < n - dist ? dist : n - dist;
    const int dst = (me - dist + n) % n, src = (me + dist) % n;
    // I send my relative [0, cnt); src's relative [0, cnt) is my relative [dist, dist + cnt).
    std::size_t sbytes = roff[cnt];
    std::size_t rbytes = roff[dist + cnt] - roff[dist];
    Status st = exchange(r, dst, tmp, sbytes, src, at(tmp, roff[dist]), rbytes, step);
    if (!ok(st)) return st;
  }
  // Back to node order.
  for (int i = 1; i < n; ++i) {
    const int node = (me + i) % n;
    std::memcpy(at(out, off[node]), at(tmp, roff[i]), sizes[node]);
  }
  return Status::Ok;
}

}  // namespace gcoll
