#include "coll/rail.h"

#include <cstring>

#include "base/stats.h"
#include "kernels/compress.h"
#include "kernels/host_reduce.h"

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

// Before a network step: the work queued on the call's memory space is complete (device:
// a reduction or copy into a buffer about to be sent, or out of one about to be received
// into, may still be in flight on the space's stream).
Status settle(const Rail &r) { return r.space ? r.space->settle() : Status::Ok; }

// dst = src inside the call's memory (device memory through the space).
Status local_copy(const Rail &r, void *dst, const void *src, std::size_t bytes) {
  if (r.space) return r.space->copy(dst, src, bytes);
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
  return Status::Ok;
}

Status exchange(Rail &r, int dst, const void *s, std::size_t sb, int src, void *d, std::size_t db, int step) {
  count_step(r);
  const Status st = settle(r);
  return ok(st) ? r.channel->sendrecv(dst, s, sb, src, d, db, r.tag(step), r.timeout_s) : st;
}

Status send_only(Rail &r, int dst, const void *s, std::size_t sb, int step) {
  count_step(r);
  net::Request req;
  Status st = settle(r);
  if (ok(st)) st = r.channel->isend(dst, s, sb, r.tag(step), &req);
  return ok(st) ? r.channel->wait(&req, 1, r.timeout_s) : st;
}

Status recv_only(Rail &r, int src, void *d, std::size_t db, int step) {
  count_step(r);
  net::Request req;
  Status st = settle(r);
  if (ok(st)) st = r.channel->irecv(src, d, db, r.tag(step), &req);
  return ok(st) ? r.channel->wait(&req, 1, r.timeout_s) : st;
}

// acc = op(acc, received) (Rail::space).
Status reduce_into(const Rail &r, DType t, ROp op, void *acc, const void *received, std::size_t elems) {
  const void *srcs[2] = {acc, received};
  if (r.space) return r.space->reduce(t, op, acc, srcs, 2, elems);
  return host_reduce(t, op, acc, srcs, 2, elems);
}

// The compressed ring's formats where the call's memory is (Rail::space: device memory
// through the space's runtime, queued on its stream; nullptr: host memory, at once).
Status encode_in(const Rail &r, Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (r.space) return r.space->compress_encode(c, t, src, n, dst);
  compress_encode(c, t, src, n, dst);
  return Status::Ok;
}

Status decode_in(const Rail &r, Compress c, DType t, const void *src, std::size_t n, void *dst, bool add) {
  if (r.space)
    return add ? r.space->compress_decode_add(c, t, src, n, dst) : r.space->compress_decode(c, t, src, n, dst);
  if (add) compress_decode_add(c, t, src, n, dst);
  else compress_decode(c, t, src, n, dst);
  return Status::Ok;
}

}  // namespace

int pow2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int rd_vrank(int n, int rank) {
  const int extra = n - pow2_floor(n);
  return rank < 2 * extra ? (rank % 2 ? rank / 2 : -1) : rank - extra;
}

int rd_real_rank(int n, int vrank) {
  const int extra = n - pow2_floor(n);
  return vrank < extra ? 2 * vrank + 1 : vrank + extra;
}

void schedule_ring(const ScheduleArgs &a, std::vector<RailStep> *steps) {
  const int n = a.n, me = a.rank;
  const std::size_t count = a.count, elem = a.elem;
  void *buf = a.buf, *tmp = a.tmp;
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  int tag = 0;
  // Reduce-scatter: after n-1 steps I hold the full reduction of part (me + 1) % n.
  for (int s = 0; s < n - 1; ++s) {
    std::size_t so, sl, ro, rl;
    part_range(count, n, (me - s + n) % n, &so, &sl);
    part_range(count, n, (me - s - 1 + 2 * n) % n, &ro, &rl);
    steps->push_back({right, left, at(buf, so * elem), sl * elem, tmp, rl * elem, at(buf, ro * elem), rl, tag++});
  }
  // Allgather: pass the finished parts around the ring.
  for (int s = 0; s < n - 1; ++s) {
    std::size_t so, sl, ro, rl;
    part_range(count, n, (me + 1 - s + n) % n, &so, &sl);
    part_range(count, n, (me - s + n) % n, &ro, &rl);
    steps->push_back({right, left, at(buf, so * elem), sl * elem, at(buf, ro * elem), rl * elem, nullptr, 0, tag++});
  }
}

void schedule_rd(const ScheduleArgs &a, std::vector<RailStep> *steps) {
  // Recursive doubling; ranks 0 .. 2*extra-1 pair up first: the even one hands its data
  // to the odd one and sits out until the result comes back.
  const int n = a.n, me = a.rank;
  const std::size_t count = a.count, bytes = count * a.elem;
  void *buf = a.buf, *tmp = a.tmp;
  const int p = pow2_floor(n), extra = n - p, vrank = rd_vrank(n, me);
  if (me < 2 * extra) {
    if (me % 2 == 0) steps->push_back({me + 1, -1, buf, bytes, nullptr, 0, nullptr, 0, 0});
    else steps->push_back({-1, me - 1, nullptr, 0, tmp, bytes, buf, count, 0});
  }
  int tag = 1;
  for (int mask = 1; vrank >= 0 && mask < p; mask <<= 1) {
    const int partner = rd_real_rank(n, vrank ^ mask);
    steps->push_back({partner, partner, buf, bytes, tmp, bytes, buf, count, tag++});
  }
  tag = 1 + rd_steps(p);  // the same unfold tag on ranks that sat out
  if (me < 2 * extra) {
    if (me % 2 == 1) steps->push_back({me - 1, -1, buf, bytes, nullptr, 0, nullptr, 0, tag});
    else steps->push_back({-1, me + 1, nullptr, 0, buf, bytes, nullptr, 0, tag});
  }
}

namespace {

// The steps `build` gives this rail rank for an allreduce of buf[0, count) (none alone or
// without elements).
std::vector<RailStep> rail_steps(const Rail &r, ScheduleBuilder build, void *buf, std::size_t count, std::size_t elem,
                                 void *tmp) {
  std::vector<RailStep> steps;
  const int n = r.channel->size();
  if (n > 1 && count > 0) {
    ScheduleArgs a;
    a.n = n;
    a.rank = r.channel->rank();
    a.count = count;
    a.elem = elem;
    a.buf = buf;
    a.tmp = tmp;
    build(a, &steps);
  }
  return steps;
}

}  // namespace

Status RailAllreduce::start(Rail r, ScheduleBuilder build, DType t, ROp op, void *buf, std::size_t count,
                            std::size_t elem, void *tmp) {
  return start_steps(r, t, op, rail_steps(r, build, buf, count, elem, tmp));
}

Status RailAllreduce::start_compressed(Rail r, Compress c, DType t, void *buf, std::size_t count, std::size_t elem,
                                       void *cbuf, std::size_t cbuf_bytes) {
  // No tmp: the ring's receives go to cb_ instead.
  std::vector<RailStep> steps = rail_steps(r, schedule_ring, buf, count, elem, nullptr);
  const int n = r.channel->size();
  std::size_t half = 0;
  if (!steps.empty()) {
    std::size_t off, len;
    part_range(count, n, 0, &off, &len);  // part 0 is a largest part
    half = (compressed_bytes(c, len) + 63) / 64 * 64;
    // A guard only: for n >= 2 a segment is at most about half the slice, whose elements fit
    // cbuf_bytes (the engine passes a chunk's capacity), and no format takes more than 2
    // bytes per element beyond fp8's scales. Before anything moved.
    if (2 * half > cbuf_bytes) return Status::ErrInternal;
  }
  cb_[0] = static_cast<char *>(cbuf);
  cb_[1] = static_cast<char *>(cbuf) + half;
  cur_ = 0;
  in_allgather_ = false;
  const Status st = start_steps(r, t, ROp::Sum, std::move(steps), c, elem);
  return st;
}

Status RailAllreduce::start_steps(Rail r, DType t, ROp op, std::vector<RailStep> steps) {
  return start_steps(r, t, op, std::move(steps), Compress::Off, 1);
}

Status RailAllreduce::start_steps(Rail r, DType t, ROp op, std::vector<RailStep> steps, Compress c, std::size_t elem) {
  comp_ = c;
  elem_ = elem;
  r_ = r;
  t_ = t;
  op_ = op;
  steps_ = std::move(steps);
  next_ = 0;
  posted_ = false;
  return post();
}

void steps_ring_reduce_scatter(int n, int me, const std::vector<std::size_t> &seg_off,
                               const std::vector<std::size_t> &seg_len, std::size_t elem, void *buf, void *tmp,
                               std::vector<RailStep> *steps) {
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  // Round s: send my partial of segment me - s - 1, receive left's of me - s - 2 and add
  // mine; after n - 1 rounds the last one received is segment me, complete.
  for (int s = 0; s < n - 1; ++s) {
    const int sx = ((me - s - 1) % n + n) % n, rx = ((me - s - 2) % n + n) % n;
    RailStep st;
    st.tag = s;
    if (seg_len[sx]) {
      st.dst = right;
      st.sbuf = at(buf, seg_off[sx] * elem);
      st.sbytes = seg_len[sx] * elem;
    }
    if (seg_len[rx]) {
      st.src = left;
      st.rbuf = tmp;
      st.rbytes = seg_len[rx] * elem;
      st.acc = at(buf, seg_off[rx] * elem);
      st.elems = seg_len[rx];
    }
    if (st.dst >= 0 || st.src >= 0) steps->push_back(st);
  }
}

void steps_binomial_reduce(int n, int me, int root, std::size_t count, std::size_t elem, void *buf, void *tmp,
                           std::vector<RailStep> *steps) {
  if (n == 1 || count == 0) return;
  const int rel = (me - root + n) % n;
  // Children rel + 1, rel + 2, rel + 4, ... below my lowest set bit send up; then I send
  // to my parent (rel with that bit cleared).
  int tag = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++tag) {
    RailStep st;
    st.tag = tag;
    if (rel & mask) {
      st.dst = (rel - mask + root) % n;
      st.sbuf = buf;
      st.sbytes = count * elem;
      steps->push_back(st);
      return;
    }
    if (rel + mask < n) {
      st.src = (rel + mask + root) % n;
      st.rbuf = tmp;
      st.rbytes = count * elem;
      st.acc = buf;
      st.elems = count;
      steps->push_back(st);
    }
  }
}

Status RailAllreduce::post() {
  if (next_ >= steps_.size()) return Status::Ok;
  const RailStep &s = steps_[next_];
  count_step(r_);
  req_[0] = net::Request{};
  req_[1] = net::Request{};
  Status st = settle(r_);  // the previous step's reduction into s.sbuf, out of s.rbuf
  if (!ok(st)) return st;
  if (comp_ != Compress::Off) {
    // Compressed ring: reduce-scatter steps (acc) send their partial encoded; the first
    // allgather step encodes the segment this rank owns and rounds its own copy through
    // the same bytes (decoded), so that it holds exactly what the others will; the later
    // ones forward what the previous step received (cb_[cur_]).
    const std::size_t sn = s.sbytes / elem_, rn = s.rbytes / elem_;
    const std::size_t sb = compressed_bytes(comp_, sn), rb = compressed_bytes(comp_, rn);
    // On device memory the encoding is queued on the space's stream: settled again before
    // the transport reads cb_ (both device ways: direct and pipelined send from it).
    if (s.acc) {
      st = encode_in(r_, comp_, t_, s.sbuf, sn, cb_[cur_]);
    } else if (!in_allgather_) {
      in_allgather_ = true;
      st = encode_in(r_, comp_, t_, s.sbuf, sn, cb_[cur_]);
      if (ok(st)) st = decode_in(r_, comp_, t_, cb_[cur_], sn, const_cast<void *>(s.sbuf), false);
    }
    if (ok(st)) st = settle(r_);
    if (!ok(st)) return st;
    process_stats().count(Counter::CompressedBytes, sb);
    process_stats().count(Counter::CompressedRawBytes, s.sbytes);
    if (s.src >= 0) st = r_.channel->irecv(s.src, cb_[1 - cur_], rb, r_.tag(s.tag), &req_[1]);
    if (ok(st) && s.dst >= 0) st = r_.channel->isend(s.dst, cb_[cur_], sb, r_.tag(s.tag), &req_[0]);
  } else {
    if (s.src >= 0) st = r_.channel->irecv(s.src, s.rbuf, s.rbytes, r_.tag(s.tag), &req_[1]);
    if (ok(st) && s.dst >= 0) st = r_.channel->isend(s.dst, s.sbuf, s.sbytes, r_.tag(s.tag), &req_[0]);
  }
  if (!ok(st)) {
    r_.channel->cancel(req_, 2);
    return st;
  }
  posted_ = true;
  return Status::Ok;
}

Status RailAllreduce::advance(bool *done) {
  *done = false;
  while (posted_) {
    bool all_done = false;
    Status st = r_.channel->test(req_, 2, &all_done);  // progresses the transport once
    if (!ok(st)) {
      posted_ = false;
      return st;
    }
    if (!all_done) return Status::Ok;  // still in flight
    posted_ = false;
    st = complete_step(steps_[next_]);
    if (!ok(st)) return st;
    ++next_;
    st = post();
    if (!ok(st)) return st;
  }
  *done = next_ >= steps_.size();
  return Status::Ok;
}

// After step s's messages arrived: its reduction (acc = op(acc, received)), or for the
// compressed ring the received message decoded (added into acc, or into the allgather's
// segment, whose bytes the next step forwards).
Status RailAllreduce::complete_step(const RailStep &s) {
  if (comp_ != Compress::Off) {
    const std::size_t rn = s.rbytes / elem_;
    if (s.acc) return decode_in(r_, comp_, t_, cb_[1 - cur_], rn, s.acc, true);
    const Status st = decode_in(r_, comp_, t_, cb_[1 - cur_], rn, s.rbuf, false);
    cur_ = 1 - cur_;  // forwarded by the next step
    return st;
  }
  return s.acc ? reduce_into(r_, t_, op_, s.acc, s.rbuf, s.elems) : Status::Ok;
}

Status RailAllreduce::finish() {
  bool done = false;
  while (true) {
    if (posted_) {
      Status st = r_.channel->wait(req_, 2, r_.timeout_s);
      if (!ok(st)) {
        posted_ = false;
        return st;
      }
    }
    Status st = advance(&done);
    if (!ok(st) || done) return st;
  }
}

void RailAllreduce::abandon() {
  if (posted_) r_.channel->cancel(req_, 2);
  posted_ = false;
  next_ = steps_.size();
}

Status rail_allreduce(Rail &r, ScheduleBuilder build, DType t, ROp op, void *buf, std::size_t count, std::size_t elem,
                      void *tmp) {
  RailAllreduce x;
  Status st = x.start(r, build, t, op, buf, count, elem, tmp);
  return ok(st) ? x.finish() : st;
}

Status rail_bcast_binomial(Rail &r, void *buf, std::size_t bytes, int root) {
  const int n = r.channel->size(), me = r.channel->rank();
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
  const int n = r.channel->size(), me = r.channel->rank();
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
  const int n = r.channel->size(), me = r.channel->rank();
  if (n == 1) return Status::Ok;
  // tmp holds pieces in relative order: position i is rail rank (me + i) % n.
  std::vector<std::size_t> roff(n + 1, 0), off(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    roff[i + 1] = roff[i] + sizes[(me + i) % n];
    off[i + 1] = off[i] + sizes[i];
  }
  Status st = local_copy(r, tmp, at(out, off[me]), sizes[me]);
  if (!ok(st)) return st;
  int step = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++step) {
    const int cnt = dist < n - dist ? dist : n - dist;
    const int dst = (me - dist + n) % n, src = (me + dist) % n;
    // I send my relative [0, cnt); src's relative [0, cnt) is my relative [dist, dist + cnt).
    std::size_t sbytes = roff[cnt];
    std::size_t rbytes = roff[dist + cnt] - roff[dist];
    st = exchange(r, dst, tmp, sbytes, src, at(tmp, roff[dist]), rbytes, step);
    if (!ok(st)) return st;
  }
  // Back to node order.
  for (int i = 1; ok(st) && i < n; ++i) {
    const int node = (me + i) % n;
    st = local_copy(r, at(out, off[node]), at(tmp, roff[i]), sizes[node]);
  }
  return st;
}

Status rail_alltoallv_pairwise(Rail &r, const std::vector<std::size_t> &sizes_out, const void *out,
                               const std::vector<std::size_t> &sizes_in, void *in) {
  const int n = r.channel->size(), me = r.channel->rank();
  std::vector<std::size_t> oo(n + 1, 0), io(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    oo[i + 1] = oo[i] + sizes_out[i];
    io[i + 1] = io[i] + sizes_in[i];
  }
  Status st = local_copy(r, at(in, io[me]), static_cast<const char *>(out) + oo[me], sizes_in[me]);
  for (int s = 1; ok(st) && s < n; ++s) {
    const int dst = (me + s) % n, src = (me - s + n) % n;
    count_step(r);
    net::Request req[2];
    st = settle(r);  // what the space copied into out, or still copies out of in
    if (ok(st) && sizes_in[src]) st = r.channel->irecv(src, at(in, io[src]), sizes_in[src], r.tag(s), &req[0]);
    if (ok(st) && sizes_out[dst])
      st = r.channel->isend(dst, static_cast<const char *>(out) + oo[dst], sizes_out[dst], r.tag(s), &req[1]);
    if (!ok(st)) {
      r.channel->cancel(req, 2);
      return st;
    }
    st = r.channel->wait(req, 2, r.timeout_s);
  }
  return st;
}

Status rail_barrier(Rail &r) {
  net::Channel *ch = r.channel;
  const int n = ch->size(), me = ch->rank();
  if (n <= 1) return Status::Ok;
  std::vector<char> in(static_cast<std::size_t>(n));
  const char done = 1;
  std::vector<net::Request> reqs(2 * static_cast<std::size_t>(n - 1));
  int k = 0;
  Status st = Status::Ok;
  for (int p = 0; ok(st) && p < n; ++p)
    if (p != me) st = ch->irecv(p, &in[static_cast<std::size_t>(p)], 1, r.tag(0), &reqs[static_cast<std::size_t>(k++)]);
  for (int p = 0; ok(st) && p < n; ++p)
    if (p != me) st = ch->isend(p, &done, 1, r.tag(0), &reqs[static_cast<std::size_t>(k++)]);
  if (!ok(st)) {
    ch->cancel(reqs.data(), k);
    return st;
  }
  return ch->wait(reqs.data(), k, r.timeout_s);
}

}  // namespace gcoll
