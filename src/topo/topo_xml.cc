#include "topo/topo_xml.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gcoll {
namespace topo {

namespace {

using Attrs = std::vector<std::pair<std::string, std::string>>;

// ---------------------------------------------------------------------------------------
// A small XML reader: elements, attributes, comments, the prolog; text is skipped. Enough
// for NCCL's files (which its own reader, simpler still, also reads) and hand-written ones.
// It accepts what NCCL's parser accepts (graph/xml.cc: xmlGetNode, xmlGetValue): a
// repeated attribute (xmlGetAttr returns the first one: so does Element::attr), '<' or a
// bare '&' inside a quoted value (NCCL reads up to the closing quote and decodes nothing).

struct Element {
  std::string name;
  Attrs attrs;
  std::vector<Element> children;
  int line = 0;

  const std::string *attr(const char *key) const {
    for (const auto &a : attrs) {
      if (a.first == key) return &a.second;
    }
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(const std::string &text) : s_(text) {}

  // The document's top-level elements.
  bool parse(std::vector<Element> *top, std::string *error) {
    if (!content(top, nullptr)) {
      *error = error_;
      return false;
    }
    return true;
  }

 private:
  // Deep enough for any PCI tree; bounds the recursion on hostile input.
  static constexpr int kMaxDepth = 200;

  bool fail(int line, const std::string &what) {
    error_ = "line " + std::to_string(line) + ": " + what;
    return false;
  }
  bool eof() const { return i_ >= s_.size(); }
  char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void advance() {
    if (s_[i_] == '\n') ++line_;
    ++i_;
  }
  bool starts(const char *p) const { return s_.compare(i_, std::strlen(p), p) == 0; }
  void skip_space() {
    while (!eof() && std::strchr(" \t\r\n", peek()) != nullptr) advance();
  }
  // Skips past `end`; false at the end of the text.
  bool skip_past(const char *end) {
    while (!eof() && !starts(end)) advance();
    if (eof()) return false;
    for (size_t k = std::strlen(end); k > 0; --k) advance();
    return true;
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  }
  std::string name() {
    size_t b = i_;
    while (!eof() && name_char(peek())) advance();
    return s_.substr(b, i_ - b);
  }

  // Children of `parent` (nullptr: the document) up to its end tag.
  bool content(std::vector<Element> *out, const Element *parent) {
    for (;;) {
      while (!eof() && peek() != '<') advance();  // text content: ignored
      if (eof()) {
        if (parent == nullptr) return true;
        return fail(line_, "<" + parent->name + "> (line " + std::to_string(parent->line) + ") is not closed");
      }
      const int line = line_;
      if (starts("<!--")) {
        if (!skip_past("-->")) return fail(line, "unterminated comment");
      } else if (starts("<![CDATA[")) {
        if (!skip_past("]]>")) return fail(line, "unterminated CDATA section");
      } else if (starts("<?")) {
        if (!skip_past("?>")) return fail(line, "unterminated <? ... ?>");
      } else if (starts("<!")) {  // <!DOCTYPE ...>
        if (!skip_past(">")) return fail(line, "unterminated <! ... >");
      } else if (starts("</")) {
        advance();
        advance();
        const std::string n = name();
        skip_space();
        if (peek() != '>') return fail(line_, "expected '>' in </" + n + ">");
        advance();
        if (parent == nullptr) return fail(line, "</" + n + "> without an open element");
        if (n != parent->name) {
          return fail(line, "</" + n + "> closes <" + parent->name + "> (line " + std::to_string(parent->line) + ")");
        }
        return true;
      } else {
        Element e;
        if (!element(&e, parent == nullptr ? 0 : depth_)) return false;
        out->push_back(std::move(e));
      }
    }
  }

  bool element(Element *e, int depth) {
    e->line = line_;
    advance();  // '<'
    e->name = name();
    if (e->name.empty()) return fail(e->line, "expected an element name after '<'");
    for (;;) {
      skip_space();
      if (eof()) return fail(e->line, "<" + e->name + ": unexpected end of text");
      if (peek() == '/') {
        advance();
        if (peek() != '>') return fail(line_, "expected '>' after '/' in <" + e->name + ">");
        advance();
        return true;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      const int line = line_;
      const std::string key = name();
      if (key.empty()) return fail(line, std::string("unexpected '") + peek() + "' in <" + e->name + ">");
      skip_space();
      if (peek() != '=') return fail(line_, "attribute " + key + " of <" + e->name + "> has no value");
      advance();
      skip_space();
      const char quote = peek();
      if (quote != '"' && quote != '\'') return fail(line_, "attribute " + key + ": value not in quotes");
      advance();
      std::string raw;
      while (!eof() && peek() != quote) {
        raw += peek();
        advance();
      }
      if (eof()) return fail(line, "attribute " + key + ": unterminated value");
      advance();
      // NCCL keeps both and reads the first: so does attr(); the second is dropped here.
      if (e->attr(key.c_str()) != nullptr) continue;
      std::string value;
      if (!decode(raw, &value)) value = raw;  // an '&' that starts no entity: as written, like NCCL
      e->attrs.emplace_back(key, value);
    }
    if (depth + 1 > kMaxDepth) return fail(e->line, "elements nested too deeply");
    const int saved = depth_;
    depth_ = depth + 1;
    const bool ok = content(&e->children, e);
    depth_ = saved;
    return ok;
  }

  static bool decode(const std::string &raw, std::string *out) {
    static const struct {
      const char *name;
      char c;
    } kEntities[] = {{"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        *out += raw[i];
        continue;
      }
      const size_t semi = raw.find(';', i);
      if (semi == std::string::npos) return false;
      const std::string ent = raw.substr(i + 1, semi - i - 1);
      bool found = false;
      for (const auto &k : kEntities) {
        if (ent == k.name) {
          *out += k.c;
          found = true;
        }
      }
      if (!found && ent.size() > 1 && ent[0] == '#') {  // &#65; &#x41; (ASCII only)
        char *end = nullptr;
        const long v = ent[1] == 'x' ? std::strtol(ent.c_str() + 2, &end, 16) : std::strtol(ent.c_str() + 1, &end, 10);
        if (end != nullptr && *end == '\0' && v > 0 && v < 128) {
          *out += static_cast<char>(v);
          found = true;
        }
      }
      if (!found) return false;
      i = semi;
    }
    return true;
  }

  const std::string &s_;
  size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------------------------------
// Attribute order: NCCL's where it has one (what its detection writes), then the others
// in the order read. The reader stores attributes in this order already, so that a file
// written back and read again gives the same model.

const std::vector<std::string> kCpuOrder = {"host_hash", "numaid", "affinity", "arch", "vendor", "familyid", "modelid"};
const std::vector<std::string> kPciOrder = {"busid",           "class",            "vendor",     "device",
                                            "subsystem_vendor", "subsystem_device", "link_speed", "link_width"};
const std::vector<std::string> kGpuOrder = {"dev", "sm", "rank", "gdr"};
const std::vector<std::string> kNetOrder = {"name",    "dev",     "speed", "port", "latency",
                                            "guid",    "maxconn", "gdr",   "coll"};

Attrs ordered(const Attrs &attrs, const std::vector<std::string> &known) {
  Attrs out;
  for (const auto &k : known) {
    for (const auto &a : attrs) {
      if (a.first == k) out.push_back(a);
    }
  }
  for (const auto &a : attrs) {
    bool is_known = false;
    for (const auto &k : known) is_known = is_known || a.first == k;
    if (!is_known) out.push_back(a);
  }
  return out;
}

// The element's attributes without `skip` (what the model holds in fields) and without
// NCCL's `keep` (its trimming marker, meaningless in a file).
Attrs kept(const Element &e, const std::vector<std::string> &skip, const std::vector<std::string> &known) {
  Attrs out;
  for (const auto &a : e.attrs) {
    bool drop = a.first == "keep";
    for (const auto &k : skip) drop = drop || a.first == k;
    if (!drop) out.push_back(a);
  }
  return ordered(out, known);
}

bool parse_int(const std::string &v, long *out) {
  if (v.empty()) return false;
  char *end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 0);
  if (errno != 0 || *end != '\0') return false;
  *out = x;
  return true;
}

// NCCL's class strings compare as prefixes ("0x03" is any display controller); a short
// one is read as the class with the missing low bytes zero.
bool parse_class(const std::string &v, std::uint32_t *out) {
  if (v.size() < 3 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X') || v.size() > 8) return false;
  long x = 0;
  if (!parse_int(v, &x) || x < 0) return false;
  const size_t digits = v.size() - 2;
  *out = static_cast<std::uint32_t>(x) << (4 * (6 - (digits > 6 ? 6 : digits)));
  return true;
}

struct PendingLink {
  int gpu;
  std::string target;
  int count;
  int line;
  bool classless;  // no tclass in the file
};
struct PendingPair {
  int gpu;
  std::string target;
  PairState state;
};

class Builder {
 public:
  explicit Builder(NodeTopo *t) : t_(t) {}

  bool system(const Element &sys) {
    for (const Element &c : sys.children) {
      if (c.name == "cpu" && !cpu(c)) return false;
    }
    if (!resolve()) return false;
    // GPU i is the i-th by PCI bus id, as nvidia-smi, NVML and CUDA_DEVICE_ORDER=PCI_BUS_ID
    // number them (and as NCCL's dumps' dev attributes do), whatever order the file has.
    sort_gpus_by_bus_id(t_);
    return true;
  }
  const std::string &error() const { return error_; }

 private:
  bool fail(const Element &e, const std::string &what) {
    error_ = "line " + std::to_string(e.line) + ": <" + e.name + "> " + what;
    return false;
  }
  // NCCL reads numbers with strtol(value, NULL, 0) and checks nothing (xml.h: xmlGetAttrInt):
  // "16 " is 16, "x" is 0. The same here; absent or empty: the caller's default.
  bool int_attr(const Element &e, const char *key, long *out) {
    const std::string *v = e.attr(key);
    if (v == nullptr || v->empty()) return true;
    if (!parse_int(*v, out)) *out = std::strtol(v->c_str(), nullptr, 0);
    return true;
  }

  bool cpu(const Element &e) {
    Numa n;
    long id = -1;
    if (!int_attr(e, "numaid", &id)) return false;
    n.os_index = id < 0 ? -1 : static_cast<int>(id);
    if (const std::string *a = e.attr("affinity")) n.affinity = *a;
    n.attrs = kept(e, {"numaid", "affinity"}, kCpuOrder);
    const int index = static_cast<int>(t_->numa.size());
    t_->numa.push_back(std::move(n));
    for (const Element &c : e.children) {
      if (c.name == "pci" && !pci(c, -1, index)) return false;
      // NCCL puts a NIC that is no PCI device (virtual, USB) straight under its CPU.
      if (c.name == "nic" && !nic(c, -1, index)) return false;
    }
    return true;
  }

  bool pci(const Element &e, int parent, int numa) {
    PciNode p;
    const std::string *busid = e.attr("busid");
    if (busid == nullptr) return fail(e, "has no busid");  // NCCL too: xmlGetAttrStr fails
    p.bus_id = pci_bus_id_normalise(*busid);
    const bool has_gpu_child = std::any_of(e.children.begin(), e.children.end(),
                                           [](const Element &c) { return c.name == "gpu"; });
    // NCCL takes any text (busIdToInt64 keeps the hex digits); a bridge or NIC keeps it as
    // written, a GPU (keyed by its bus id, numbered in bus order) needs a real one.
    if (p.bus_id.empty() && !has_gpu_child) p.bus_id = *busid;
    if (p.bus_id.empty()) return fail(e, "busid=\"" + *busid + "\" is not a PCI bus id");
    // NCCL maps a class it does not know to a plain PCI node (topo.cc: kvDictPciClass's
    // fallback): here the class stays unknown (0).
    if (const std::string *c = e.attr("class")) {
      if (!c->empty() && !parse_class(*c, &p.class_code)) p.class_code = 0;
    }
    p.parent = parent;
    p.numa = numa;
    p.attrs = kept(e, {"busid", "class"}, kPciOrder);
    const int index = static_cast<int>(t_->pci.size());
    t_->pci.push_back(std::move(p));
    bool has_gpu = false, has_nic = false;
    for (const Element &c : e.children) {
      if (c.name == "pci") {
        if (!pci(c, index, numa)) return false;
      } else if (c.name == "gpu") {
        // Several <gpu> in one function are NCCL's MLOPart partitions of one device
        // (topo.cc: ncclTopoAddPci, ncclTopoAddGpuSub): one GPU here, as nvidia-smi shows
        // it; the first element describes it.
        if (has_gpu) continue;
        has_gpu = true;
        if (!gpu(c, index, numa)) return false;
      } else if (c.name == "nic") {
        // NCCL reads the first <nic> of a function only (ncclTopoAddPci: xmlGetSub).
        if (has_nic) continue;
        has_nic = true;
        if (!nic(c, index, numa)) return false;
      }
      // pcilink (Broadcom switch links), anything else: ignored.
    }
    return true;
  }

  bool gpu(const Element &e, int pci_index, int numa) {
    Gpu g;
    g.bus_id = t_->pci[pci_index].bus_id;
    if (t_->gpu_index(g.bus_id) >= 0) return fail(e, "GPU " + g.bus_id + " appears twice");
    g.pci = pci_index;
    g.numa = numa;
    long dev = -1, sm = 0;
    if (!int_attr(e, "dev", &dev) || !int_attr(e, "sm", &sm)) return false;
    g.dev = static_cast<int>(dev);
    g.sm = static_cast<int>(sm);
    if (const std::string *u = e.attr("uuid")) g.uuid = *u;
    g.attrs = kept(e, {"dev", "sm", "uuid"}, kGpuOrder);
    const int index = static_cast<int>(t_->gpus.size());
    for (const Element &c : e.children) {
      if (c.name == "nvlink") {
        long count = 1;
        if (!int_attr(c, "count", &count)) return false;
        if (count < 0) return fail(c, "count is negative");
        const std::string *target = c.attr("target");
        const std::string *tclass = c.attr("tclass");
        std::uint32_t cls = 0;
        // A tclass NCCL does not know maps to a PCI node, and an NVLink to anything but a
        // GPU or a CPU goes to its NVSwitch (topo.cc: ncclTopoAddNvLinks): the same here.
        if (tclass != nullptr && !tclass->empty() && !parse_class(*tclass, &cls)) cls = 0x068000;
        // NCCL's classes: 0x068000 an NVSwitch, 0x068001 a CPU (POWER9's NVLink to the
        // host, no path to another GPU), 0x03.... a GPU. Without a class, the target
        // is a GPU if the file has one at that bus id (resolved below).
        if (cls == 0 || (cls >> 16) == 0x03) {
          if (target != nullptr) links_.push_back({index, *target, static_cast<int>(count), c.line, cls == 0});
        } else if (cls != 0x068001) {
          g.nvswitch_links += static_cast<int>(count);
        }
      } else if (c.name == "gcoll_p2p") {
        const std::string *target = c.attr("target");
        const std::string *state = c.attr("state");
        if (target == nullptr || state == nullptr) return fail(c, "needs target and state");
        PairState st;
        if (*state == "denied") {
          st = PairState::Denied;
        } else if (*state == "broken") {
          st = PairState::Broken;
        } else {
          return fail(c, "state=\"" + *state + "\": denied or broken");
        }
        pairs_.push_back({index, *target, st});
      }
      // c2c (Grace's chip-to-chip link), anything else: ignored.
    }
    t_->gpus.push_back(std::move(g));
    return true;
  }

  // The <net> elements of one <nic>, as NCCL reads them (topo.cc: ncclTopoAddNic,
  // ncclTopoAddNet): a <net> without dev is ignored, so is one marked net="0" (a physical
  // port fused into a virtual NIC); name, speed, gdr and the rest are optional. A NIC with
  // no PCI function of its own (Slingshot, a cloud VM's virtual NIC, one only a net plugin
  // knows) has its <nic> straight under <cpu>, and NCCL's dumps may list it under every
  // CPU: NCCL's reader makes one NIC node per <cpu> (ncclTopoAddCpu) and never rejects the
  // repeat. It is one NIC: the first listing is the one kept (NCCL's own lookup by name,
  // xml.cc: ncclTopoFillNet's xmlFindTagKv, finds the first), later ones only fill in what
  // the first lacks.
  bool nic(const Element &e, int pci_index, int numa) {
    for (const Element &c : e.children) {
      if (c.name != "net") continue;
      const std::string *dev_attr = c.attr("dev");
      if (dev_attr == nullptr) continue;
      long enabled = 1;
      if (!int_attr(c, "net", &enabled)) return false;
      if (enabled == 0) continue;
      long dev = 0;
      if (!int_attr(c, "dev", &dev)) return false;
      Nic n;
      const std::string *name = c.attr("name");
      // NCCL keys a net by dev and never reads its name; gcoll names NICs (UCX wants one).
      n.name = name != nullptr && !name->empty() ? *name : "net" + std::to_string(dev);
      long speed = 0, gdr = 0;
      if (!int_attr(c, "speed", &speed) || !int_attr(c, "gdr", &gdr)) return false;
      const int known = t_->nic_index(n.name);
      if (known >= 0) {
        Nic &k = t_->nics[known];
        if (k.pci < 0 && pci_index >= 0) {  // a PCI home beats none
          k.pci = pci_index;
          k.bus_id = t_->pci[pci_index].bus_id;
          k.numa = numa;
        }
        if (k.speed_mbps == 0) k.speed_mbps = static_cast<int>(speed);
        if (!k.gdr) k.gdr = gdr != 0;
        for (const auto &a : kept(c, {"name", "speed", "gdr", "net"}, kNetOrder)) {
          bool have = false;
          for (const auto &b : k.attrs) have = have || b.first == a.first;
          if (!have) k.attrs.push_back(a);
        }
        k.attrs = ordered(k.attrs, kNetOrder);
        continue;
      }
      if (pci_index >= 0) n.bus_id = t_->pci[pci_index].bus_id;
      n.pci = pci_index;
      n.numa = numa;
      n.speed_mbps = static_cast<int>(speed);
      n.gdr = gdr != 0;
      n.attrs = kept(c, {"name", "speed", "gdr", "net"}, kNetOrder);
      t_->nics.push_back(std::move(n));
    }
    return true;
  }

  // NVLinks and pair facts name their GPU by bus id, which may come later in the file.
  // Targets that are not in the file (a process that saw some of the GPUs) are dropped.
  bool resolve() {
    t_->resize_pairs();
    const int n = static_cast<int>(t_->gpus.size());
    for (const PendingLink &l : links_) {
      const int b = t_->gpu_index(l.target);
      if (b >= 0 && b != l.gpu) t_->nvlinks[l.gpu][b] += l.count;
      // Without tclass NCCL takes the class of the target's PCI device, and where that
      // device is not to be seen, an NVSwitch (xml.cc: ncclTopoGetXmlFromGpu, "Remote
      // NVLink device is not visible inside this VM. Assume NVSwitch").
      if (b < 0 && l.classless) {
        const std::string key = pci_bus_id_normalise(l.target);
        std::uint32_t cls = 0x068000;
        bool seen = false;
        for (const PciNode &p : t_->pci) {
          if (!seen && !key.empty() && p.bus_id == key) {
            seen = true;
            cls = p.class_code;
          }
        }
        if (!seen || cls == 0x068000) t_->gpus[l.gpu].nvswitch_links += l.count;
      }
    }
    for (const PendingPair &p : pairs_) {
      const int b = t_->gpu_index(p.target);
      if (b >= 0 && b != p.gpu) t_->pair[p.gpu][b] = combine(t_->pair[p.gpu][b], p.state);
    }
    // Either side's word holds for both.
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        const int links = std::max(t_->nvlinks[a][b], t_->nvlinks[b][a]);
        t_->nvlinks[a][b] = t_->nvlinks[b][a] = links;
        const PairState s = combine(t_->pair[a][b], t_->pair[b][a]);
        t_->pair[a][b] = t_->pair[b][a] = s;
      }
    }
    return true;
  }
  // Denied (no P2P at all) outranks broken (P2P that the probe would catch).
  static PairState combine(PairState x, PairState y) {
    if (x == PairState::Denied || y == PairState::Denied) return PairState::Denied;
    if (x == PairState::Broken || y == PairState::Broken) return PairState::Broken;
    return PairState::Default;
  }

  NodeTopo *t_;
  std::string error_;
  std::vector<PendingLink> links_;
  std::vector<PendingPair> pairs_;
};

// ---------------------------------------------------------------------------------------
// Writer. The elements come in index order within each parent (the pre-order the reader
// numbers them in), so a model read from a file comes back equal. A model that detection
// built in another order comes back renumbered in that order; NICs without PCI come after
// their CPU's PCI elements.

std::string escape(const std::string &v) {
  std::string out;
  for (char c : v) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string hex_class(std::uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%06x", static_cast<unsigned>(c));
  return buf;
}

class Writer {
 public:
  explicit Writer(const NodeTopo &t) : t_(t) {}

  std::string run() {
    out_ << "<system version=\"1\">\n";
    for (size_t i = 0; i < t_.numa.size(); ++i) cpu(static_cast<int>(i));
    // What hangs from no known CPU (detection may leave such): under a CPU of unknown
    // NUMA node, the only place the dialect has for it.
    if (has_orphans()) {
      line(2, "<cpu numaid=\"-1\">");
      cpu_children(-1, 4);
      line(2, "</cpu>");
    }
    out_ << "</system>\n";
    return out_.str();
  }

 private:
  void line(int indent, const std::string &text) { out_ << std::string(indent, ' ') << text << "\n"; }
  static std::string attrs_text(const Attrs &attrs) {
    std::string s;
    for (const auto &a : attrs) s += " " + a.first + "=\"" + escape(a.second) + "\"";
    return s;
  }
  bool is_cpu(int numa) const { return numa >= 0 && numa < static_cast<int>(t_.numa.size()); }
  // The CPU a top-level element goes under (-1: the extra one).
  int cpu_of(int numa) const { return is_cpu(numa) ? numa : -1; }

  bool has_orphans() const {
    for (const PciNode &p : t_.pci) {
      if (p.parent < 0 && !is_cpu(p.numa)) return true;
    }
    for (const Nic &n : t_.nics) {
      if (n.pci < 0 && !is_cpu(n.numa)) return true;
    }
    for (const Gpu &g : t_.gpus) {
      if (g.pci < 0 && !g.bus_id.empty() && !is_cpu(g.numa)) return true;
    }
    return false;
  }

  void cpu(int i) {
    const Numa &n = t_.numa[i];
    Attrs a = n.attrs;
    a.emplace_back("numaid", std::to_string(n.os_index));  // NCCL's reader requires it; -1: unknown
    if (!n.affinity.empty()) a.emplace_back("affinity", n.affinity);
    line(2, "<cpu" + attrs_text(ordered(a, kCpuOrder)) + ">");
    cpu_children(i, 4);
    line(2, "</cpu>");
  }

  void cpu_children(int numa, int indent) {
    for (size_t p = 0; p < t_.pci.size(); ++p) {
      if (t_.pci[p].parent < 0 && cpu_of(t_.pci[p].numa) == numa) pci(static_cast<int>(p), indent);
    }
    // A GPU outside the PCI tree gets a PCI function made of its bus id.
    for (size_t g = 0; g < t_.gpus.size(); ++g) {
      const Gpu &gpu = t_.gpus[g];
      if (gpu.pci >= 0 || gpu.bus_id.empty() || cpu_of(gpu.numa) != numa) continue;
      line(indent, "<pci busid=\"" + escape(gpu.bus_id) + "\" class=\"0x030200\">");
      gpu_element(static_cast<int>(g), indent + 2);
      line(indent, "</pci>");
    }
    nics_at(-1, numa, indent);
  }

  void pci(int p, int indent) {
    const PciNode &n = t_.pci[p];
    Attrs a = n.attrs;
    a.emplace_back("busid", n.bus_id);
    a.emplace_back("class", hex_class(n.class_code));
    const std::string open = "<pci" + attrs_text(ordered(a, kPciOrder));
    bool children = false;
    for (const Gpu &g : t_.gpus) children = children || g.pci == p;
    for (const Nic &x : t_.nics) children = children || x.pci == p;
    for (const PciNode &c : t_.pci) children = children || c.parent == p;
    if (!children) {
      line(indent, open + "/>");
      return;
    }
    line(indent, open + ">");
    for (size_t g = 0; g < t_.gpus.size(); ++g) {
      if (t_.gpus[g].pci == p) gpu_element(static_cast<int>(g), indent + 2);
    }
    nics_at(p, -2, indent + 2);
    for (size_t c = 0; c < t_.pci.size(); ++c) {
      if (t_.pci[c].parent == p) pci(static_cast<int>(c), indent + 2);
    }
    line(indent, "</pci>");
  }

  // NICs of PCI node p (all nets of one function in one <nic>); p = -1: those without
  // PCI under CPU `numa`.
  void nics_at(int p, int numa, int indent) {
    std::vector<int> list;
    for (size_t i = 0; i < t_.nics.size(); ++i) {
      const Nic &n = t_.nics[i];
      if (p >= 0 ? n.pci == p : (n.pci < 0 && cpu_of(n.numa) == numa)) list.push_back(static_cast<int>(i));
    }
    if (list.empty()) return;
    line(indent, "<nic>");
    for (int i : list) {
      const Nic &n = t_.nics[i];
      Attrs a = n.attrs;
      a.emplace_back("name", n.name);
      // NCCL ignores a <net> without dev (topo.cc: ncclTopoAddNic), and so does the reader:
      // a detected NIC (hwloc gives none) gets its index.
      bool has_dev = false;
      for (const auto &x : n.attrs) has_dev = has_dev || x.first == "dev";
      if (!has_dev) a.emplace_back("dev", std::to_string(i));
      if (n.speed_mbps != 0) a.emplace_back("speed", std::to_string(n.speed_mbps));
      a.emplace_back("gdr", n.gdr ? "1" : "0");
      line(indent + 2, "<net" + attrs_text(ordered(a, kNetOrder)) + "/>");
    }
    line(indent, "</nic>");
  }

  void gpu_element(int g, int indent) {
    const Gpu &gpu = t_.gpus[g];
    Attrs a = gpu.attrs;
    if (gpu.dev >= 0) a.emplace_back("dev", std::to_string(gpu.dev));
    if (gpu.sm > 0) a.emplace_back("sm", std::to_string(gpu.sm));
    a = ordered(a, kGpuOrder);
    if (!gpu.uuid.empty()) a.emplace_back("uuid", gpu.uuid);
    std::vector<std::string> subs;
    const int n = static_cast<int>(t_.gpus.size());
    for (int b = 0; b < n; ++b) {
      const int links = g < static_cast<int>(t_.nvlinks.size()) && b < static_cast<int>(t_.nvlinks[g].size())
                            ? t_.nvlinks[g][b]
                            : 0;
      if (b == g || links <= 0) continue;
      const int bp = t_.gpus[b].pci;
      std::uint32_t cls = bp >= 0 ? t_.pci[bp].class_code : 0;
      if ((cls >> 16) != 0x03) cls = 0x030200;
      subs.push_back("<nvlink target=\"" + escape(t_.gpus[b].bus_id) + "\" count=\"" + std::to_string(links) +
                     "\" tclass=\"" + hex_class(cls) + "\"/>");
    }
    // The model keeps the links to NVSwitches as one count; NCCL (which reads every
    // NVSwitch as one) takes "fffffff:ffff:ff", its own mark for a switch it cannot see.
    if (gpu.nvswitch_links > 0) {
      subs.push_back("<nvlink target=\"fffffff:ffff:ff\" count=\"" + std::to_string(gpu.nvswitch_links) +
                     "\" tclass=\"0x068000\"/>");
    }
    for (int b = 0; b < n; ++b) {
      const PairState s = g < static_cast<int>(t_.pair.size()) && b < static_cast<int>(t_.pair[g].size())
                              ? t_.pair[g][b]
                              : PairState::Default;
      if (b == g || s == PairState::Default) continue;
      subs.push_back("<gcoll_p2p target=\"" + escape(t_.gpus[b].bus_id) + "\" state=\"" +
                     (s == PairState::Denied ? "denied" : "broken") + "\"/>");
    }
    const std::string open = "<gpu" + attrs_text(a);
    if (subs.empty()) {
      line(indent, open + "/>");
      return;
    }
    line(indent, open + ">");
    for (const std::string &s : subs) line(indent + 2, s);
    line(indent, "</gpu>");
  }

  const NodeTopo &t_;
  std::ostringstream out_;
};

}  // namespace

bool read_topo_xml(const std::string &text, NodeTopo *out, std::string *error) {
  std::string err;
  std::vector<Element> top;
  Parser parser(text);
  if (!parser.parse(&top, &err)) {
    if (error) *error = err;
    return false;
  }
  // NCCL skips top-level elements other than <system> (xml.cc: xmlLoadSub, "Ignoring
  // element") and uses the first <system> (topo.cc: xmlFindTag). Its version attribute is
  // not checked here: NCCL refuses all but its own (1), gcoll reads what it knows of any.
  const Element *sys = nullptr;
  for (const Element &e : top) {
    if (e.name == "system" && sys == nullptr) sys = &e;
  }
  if (sys == nullptr) {
    if (error) {
      *error = top.empty() ? "line 1: no <system> element"
                           : "line " + std::to_string(top[0].line) + ": <" + top[0].name + ">, expected <system>";
    }
    return false;
  }
  NodeTopo t;
  Builder b(&t);
  if (!b.system(*sys)) {
    if (error) *error = b.error();
    return false;
  }
  *out = std::move(t);
  return true;
}

bool read_topo_file(const std::string &path, NodeTopo *out, std::string *error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string err;
  if (!read_topo_xml(ss.str(), out, &err)) {
    if (error) *error = path + ": " + err;
    return false;
  }
  return true;
}

std::string write_topo_xml(const NodeTopo &t) { return Writer(t).run(); }

}  // namespace topo
}  // namespace gcoll
