#include "storage/importers/torch_trace_importer.h"

#include <sqlite3.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include <unordered_map>
#include <unordered_set>
#include "storage/importers/varint.h"

#include "model/json_fields.h"
#include "storage/importers/input_file.h"
#include "storage/importers/op_table.h"
#include "storage/importers/scratch_db.h"
#include "storage/public_datasets.h"

namespace perfloom::storage {

namespace {

using Kind = JsonReader::Kind;

constexpr std::size_t kMaxInputs = 64;        // "Input Dims" entries kept per op
constexpr std::size_t kMaxRank = 16;          // dimensions kept per input
constexpr std::size_t kMaxRuntime = 1 << 18;  // launches remembered for kernels without External id
constexpr std::size_t kMaxPending = 1 << 16;  // kernels waiting for their launch record
constexpr int64_t kMaxGrid = (int64_t(1) << 31) - 1;

// Merged multi-process traces (ranks of one job, concatenated or merged by a tool) reuse External
// ids, and sometimes correlation ids, in every process. The op table is keyed by (process,
// External id) and (process, thread): the process is a dense index of the CPU pids (cpu_op and
// runtime events), packed above the id. Process 0, the first one, keeps the plain id, so a
// single-process trace is keyed exactly as before.
constexpr int kProcShift = 44;
constexpr int64_t kMaxExt = int64_t(1) << kProcShift;
constexpr uint32_t kMaxProcs = 1u << 18;
constexpr int32_t kNoProc = -1;
constexpr int32_t kConflict = -2;

int64_t ext_key(int32_t proc, int64_t ext) {
  if (ext <= 0 || ext >= kMaxExt || proc < 0) return 0;  // 0: never in the op table
  return proc == 0 ? ext : (int64_t(proc) << kProcShift) | ext;
}
int64_t tid_key(int32_t proc, int64_t tid) {
  return proc <= 0 ? tid : tid ^ static_cast<int64_t>((uint64_t(proc) * 0x9E3779B97F4A7C15ull) >> 1);
}

// Ops that only change tensor metadata or allocate: they never launch a kernel themselves (ops
// that may copy, like reshape or contiguous, are not here), and they are about half the cpu_op
// events of a trace, so the op table does not keep them.
bool never_launches(std::string_view name) {
  static const std::unordered_set<std::string_view> kNames = {"aten::view",
                                                              "aten::_unsafe_view",
                                                              "aten::as_strided",
                                                              "aten::t",
                                                              "aten::transpose",
                                                              "aten::permute",
                                                              "aten::expand",
                                                              "aten::unsqueeze",
                                                              "aten::squeeze",
                                                              "aten::slice",
                                                              "aten::select",
                                                              "aten::narrow",
                                                              "aten::split",
                                                              "aten::split_with_sizes",
                                                              "aten::chunk",
                                                              "aten::detach",
                                                              "aten::detach_",
                                                              "aten::alias",
                                                              "aten::empty",
                                                              "aten::empty_like",
                                                              "aten::empty_strided",
                                                              "aten::resize_",
                                                              "aten::lift_fresh",
                                                              "aten::unbind",
                                                              "aten::numpy_T",
                                                              "aten::result_type",
                                                              "aten::is_nonzero",
                                                              "aten::item",
                                                              "aten::_local_scalar_dense"};
  return kNames.count(name) > 0;
}

// A kernel event as read.
struct Kern {
  int64_t seq = 0;
  std::string name;
  double ts = 0, dur = 0;
  int64_t ext = 0, corr = 0;
  bool has_corr = false;
  int64_t device = -1;
  int64_t pid = 0;  // as written: for Kineto's GPU rows the device, not the launching process
  std::optional<int64_t> stream;
  std::optional<LaunchArgs> launch;
};

struct Launch {  // the runtime call that launched a kernel
  int64_t ext = 0;
  int64_t tid = 0;
  double ts = 0;
  int32_t proc = 0;        // the launching process (dense index)
  bool ambiguous = false;  // several processes launched this correlation id: it names none
};

// The fields of one event that the importer uses; reused from event to event.
struct Event {
  std::string ph, cat, name;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int64_t tid = 0, pid = 0;
  int64_t ext = 0, corr = 0, device = -1, stream = 0;
  bool has_ext = false, has_corr = false, has_stream = false;
  std::array<int64_t, 3> grid{}, block{};
  bool has_grid = false, has_block = false;
  int64_t regs = -1, smem = -1;
  std::vector<std::vector<int64_t>> dims;
  std::size_t n_dims = 0;
  std::vector<std::string> types;
  std::size_t n_types = 0;
  std::vector<std::string> concrete;
  std::size_t n_concrete = 0;

  void reset() {
    ph.clear();
    cat.clear();
    name.clear();
    has_ts = has_dur = has_ext = has_corr = has_grid = has_block = has_stream = false;
    ts = dur = 0;
    tid = pid = ext = corr = stream = 0;
    device = regs = smem = -1;
    grid = block = {};
    n_dims = n_types = n_concrete = 0;
  }
};

class TraceParser {
 public:
  TraceParser(JsonReader& r, ImportSink& sink, const ImportControl& control, std::function<uint64_t()> raw_offset,
              uint64_t raw_total)
      : r_(r),
        sink_(sink),
        control_(control),
        label_(r.label()),
        raw_offset_(std::move(raw_offset)),
        raw_total_(raw_total),
        ops_(control.op_memory_bytes, r.label()) {}

  void run() {
    Kind k = r_.peek();
    if (k == Kind::object) {
      r_.begin_object();
      while (r_.next_member()) {
        if (r_.key() == "traceEvents") {
          parse_events();
        } else if (r_.key() == "deviceProperties") {
          parse_devices();
        } else {
          r_.skip_value();
        }
      }
    } else if (k == Kind::array) {
      parse_events();  // the Chrome "JSON Array Format": the events alone
    } else {
      r_.fail(std::string("not a Chrome trace: the document is ") + JsonReader::kind_name(k) +
              ", not an object with traceEvents");
    }
    r_.finish();
    if (!saw_events_)
      throw ImportError(label_, "",
                        "not a Chrome trace: no traceEvents array (torch.profiler export_chrome_trace writes one)");
    finish();
  }

 private:
  [[noreturn]] void fail_event(const std::string& reason) {
    throw ImportError(label_, "event " + std::to_string(event_index_) + " (" + r_.where() + ")", reason);
  }

  int64_t integer_field(const char* field) {
    Kind k = r_.peek();
    if (k != Kind::number) fail_event(std::string(field) + ": expected an integer, found " + JsonReader::kind_name(k));
    auto n = r_.read_number();
    if (!n.integral)
      fail_event(std::string(field) + ": expected an integer, found a fraction or an out-of-range number");
    return n.integer;
  }
  double number_field(const char* field) {
    Kind k = r_.peek();
    if (k != Kind::number) fail_event(std::string(field) + ": expected a number, found " + JsonReader::kind_name(k));
    return r_.read_number().value;
  }
  void string_field(const char* field, std::string& out) {
    Kind k = r_.peek();
    if (k != Kind::string) fail_event(std::string(field) + ": expected a string, found " + JsonReader::kind_name(k));
    r_.read_string(out);
  }
  // pid and tid are numbers, or names ("Traces", "PyTorch Profiler") on annotation rows.
  int64_t id_field(const char* field) {
    Kind k = r_.peek();
    if (k == Kind::number) {
      auto n = r_.read_number();
      if (n.integral) return n.integer;
      // A fractional or huge id cannot name a process or thread; converting it would be undefined.
      if (!(std::abs(n.value) < 9.0e18)) fail_event(std::string(field) + ": not a valid id");
      return static_cast<int64_t>(n.value);
    }
    if (k == Kind::string) {
      r_.read_string(text_);
      return static_cast<int64_t>(std::hash<std::string>()(text_) >> 1);
    }
    fail_event(std::string(field) + ": expected a number or a string, found " + JsonReader::kind_name(k));
  }
  void dims3_field(const char* field, std::array<int64_t, 3>& out) {
    Kind k = r_.peek();
    if (k != Kind::array)
      fail_event(std::string(field) + ": expected an array of 3 integers, found " + JsonReader::kind_name(k));
    r_.begin_array();
    std::size_t i = 0;
    out = {1, 1, 1};
    while (r_.next_element()) {
      if (i == 3) fail_event(std::string(field) + ": more than 3 dimensions");
      int64_t v = integer_field(field);
      if (v < 0 || v > kMaxGrid) fail_event(std::string(field) + ": dimension " + std::to_string(v) + " out of range");
      out[i++] = v;
    }
    if (i == 0) fail_event(std::string(field) + ": empty");
  }

  void parse_devices() {
    Kind k = r_.peek();
    if (k != Kind::array)
      r_.fail(std::string("deviceProperties: expected an array, found ") + JsonReader::kind_name(k));
    r_.begin_array();
    while (r_.next_element()) {
      if (r_.peek() != Kind::object) r_.fail("deviceProperties: expected an object per device");
      r_.begin_object();
      int64_t id = static_cast<int64_t>(devices_.size());
      std::string name;
      while (r_.next_member()) {
        if (r_.key() == "id") {
          if (r_.peek() != Kind::number) r_.fail("deviceProperties: id must be a number");
          auto n = r_.read_number();
          // 2^64 - 1 and fractions are no device id (they would alias device -1 or another).
          if (!n.integral) r_.fail("deviceProperties: id must be an integer that fits in 64 bits (signed)");
          id = n.integer;
        } else if (r_.key() == "name") {
          if (r_.peek() != Kind::string) r_.fail("deviceProperties: name must be a string");
          r_.read_string(name);
        } else {
          r_.skip_value();
        }
      }
      if (devices_.size() < 1024) devices_[id] = name;
    }
  }

  void parse_events() {
    saw_events_ = true;
    Kind k = r_.peek();
    if (k != Kind::array) r_.fail(std::string("traceEvents: expected an array, found ") + JsonReader::kind_name(k));
    r_.begin_array();
    while (r_.next_element()) {
      try {
        parse_event();
      } catch (const ImportCancelled&) {
        throw;
      } catch (const ImportError& e) {
        if (e.where().rfind("event ", 0) == 0) throw;
        throw ImportError(label_, "event " + std::to_string(event_index_) + " (" + e.where() + ")", e.reason());
      }
      ++event_index_;
      if ((event_index_ & 1023) == 0) tick("reading events");
    }
  }

  void tick(const char* stage) {
    control_.check_cancel(label_);
    if (!control_.progress) return;
    uint64_t at = raw_offset_ ? raw_offset_() : r_.offset();
    if (at >= last_progress_ + (uint64_t(8) << 20)) {
      last_progress_ = at;
      control_.progress(ImportProgress{at, raw_total_, kernels_emitted_, stage});
    }
  }

  void parse_event() {
    if (r_.peek() != Kind::object)
      fail_event(std::string("expected an event object, found ") + JsonReader::kind_name(r_.peek()));
    ev_.reset();
    r_.begin_object();
    while (r_.next_member()) {
      const std::string_view key = r_.key();
      switch (key.size()) {
        case 2:
          if (key == "ph") {
            string_field("ph", ev_.ph);
            continue;
          }
          if (key == "ts") {
            ev_.ts = number_field("ts");
            ev_.has_ts = true;
            continue;
          }
          break;
        case 3:
          if (key == "cat") {
            string_field("cat", ev_.cat);
            continue;
          }
          if (key == "dur") {
            ev_.dur = number_field("dur");
            ev_.has_dur = true;
            continue;
          }
          if (key == "tid") {
            ev_.tid = id_field("tid");
            continue;
          }
          if (key == "pid") {
            ev_.pid = id_field("pid");
            continue;
          }
          break;
        case 4:
          if (key == "name") {
            string_field("name", ev_.name);
            continue;
          }
          if (key == "args") {
            parse_args();
            continue;
          }
          break;
      }
      r_.skip_value();
    }
    handle_event();
  }

  void parse_args() {
    Kind k = r_.peek();
    if (k != Kind::object) fail_event(std::string("args: expected an object, found ") + JsonReader::kind_name(k));
    r_.begin_object();
    while (r_.next_member()) {
      const std::string_view key = r_.key();  // string_view: unequal lengths compare in one step
      if (key == "External id") {
        ev_.ext = integer_field("args.External id");
        ev_.has_ext = true;
      } else if (key == "correlation") {
        ev_.corr = integer_field("args.correlation");
        ev_.has_corr = true;
      } else if (key == "grid") {
        dims3_field("args.grid", ev_.grid);
        ev_.has_grid = true;
      } else if (key == "block") {
        dims3_field("args.block", ev_.block);
        ev_.has_block = true;
      } else if (key == "registers per thread") {
        ev_.regs = integer_field("args.registers per thread");
        if (ev_.regs < 0 || ev_.regs > 65536) fail_event("args.registers per thread: out of range");
      } else if (key == "shared memory") {
        ev_.smem = integer_field("args.shared memory");
        if (ev_.smem < 0 || ev_.smem > (int64_t(1) << 40)) fail_event("args.shared memory: out of range");
      } else if (key == "device") {
        ev_.device = integer_field("args.device");
      } else if (key == "stream") {
        ev_.stream = integer_field("args.stream");
        ev_.has_stream = true;
      } else if (key == "Input Dims") {
        parse_dims();
      } else if (key == "Input type") {
        parse_types();
      } else if (key == "Concrete Inputs") {
        parse_concrete();
      } else {
        r_.skip_value();
      }
    }
  }

  void parse_dims() {
    Kind k = r_.peek();
    if (k != Kind::array)
      fail_event(std::string("args.Input Dims: expected an array, found ") + JsonReader::kind_name(k));
    r_.begin_array();
    while (r_.next_element()) {
      Kind ek = r_.peek();
      if (ek == Kind::null) {
        r_.read_null();
        if (ev_.n_dims < kMaxInputs) {
          if (ev_.dims.size() <= ev_.n_dims) ev_.dims.resize(ev_.n_dims + 1);
          ev_.dims[ev_.n_dims++].clear();
        }
        continue;
      }
      if (ek != Kind::array)
        fail_event(std::string("args.Input Dims: expected a list of dimensions, found ") + JsonReader::kind_name(ek));
      std::vector<int64_t>* slot = nullptr;
      if (ev_.n_dims < kMaxInputs) {
        if (ev_.dims.size() <= ev_.n_dims) ev_.dims.resize(ev_.n_dims + 1);
        slot = &ev_.dims[ev_.n_dims++];
        slot->clear();
      }
      r_.begin_array();
      bool nested = false;
      while (r_.next_element()) {
        Kind dk = r_.peek();
        if (dk == Kind::number && !nested) {
          int64_t v = integer_field("args.Input Dims");
          if (slot && slot->size() < kMaxRank) slot->push_back(v);
        } else if (dk == Kind::array && (nested || !slot || slot->empty())) {
          // A TensorList argument (aten::cat, _foreach_*): its tensors become consecutive inputs, so
          // later arguments move by the list's length less one ("Input type" keeps one "TensorList").
          if (nested && ev_.n_dims < kMaxInputs) {
            if (ev_.dims.size() <= ev_.n_dims) ev_.dims.resize(ev_.n_dims + 1);
            slot = &ev_.dims[ev_.n_dims++];
            slot->clear();
          } else if (nested) {
            slot = nullptr;
          }
          nested = true;
          parse_list_tensor(slot);
        } else {
          fail_event(std::string("args.Input Dims: expected integers, found ") + JsonReader::kind_name(dk));
        }
      }
    }
  }

  // One tensor's dims inside a TensorList entry of "Input Dims".
  void parse_list_tensor(std::vector<int64_t>* slot) {
    r_.begin_array();
    while (r_.next_element()) {
      Kind dk = r_.peek();
      if (dk != Kind::number)
        fail_event(std::string("args.Input Dims: expected integers in a tensor list, found ") +
                   JsonReader::kind_name(dk));
      int64_t v = integer_field("args.Input Dims");
      if (slot && slot->size() < kMaxRank) slot->push_back(v);
    }
  }

  void parse_concrete() {
    Kind k = r_.peek();
    if (k != Kind::array)
      fail_event(std::string("args.Concrete Inputs: expected an array, found ") + JsonReader::kind_name(k));
    r_.begin_array();
    while (r_.next_element()) {
      if (ev_.n_concrete >= kMaxInputs) {
        r_.skip_value();
        continue;
      }
      if (ev_.concrete.size() <= ev_.n_concrete) ev_.concrete.resize(ev_.n_concrete + 1);
      std::string& v = ev_.concrete[ev_.n_concrete++];
      v.clear();
      if (r_.peek() == Kind::string)
        r_.read_string(v);
      else
        r_.skip_value();  // a list of scalars ("[-1]" is a string in Kineto; other kinds are not kept)
    }
  }

  void parse_types() {
    Kind k = r_.peek();
    if (k != Kind::array)
      fail_event(std::string("args.Input type: expected an array, found ") + JsonReader::kind_name(k));
    r_.begin_array();
    while (r_.next_element()) {
      Kind ek = r_.peek();
      if (ek != Kind::string)
        fail_event(std::string("args.Input type: expected strings, found ") + JsonReader::kind_name(ek));
      if (ev_.n_types < kMaxInputs) {
        if (ev_.types.size() <= ev_.n_types) ev_.types.resize(ev_.n_types + 1);
        r_.read_string(ev_.types[ev_.n_types++]);
      } else {
        r_.skip_value();
      }
    }
  }

  void handle_event() {
    if (std::string_view(ev_.ph) != "X") return;
    const std::string_view cat = ev_.cat;
    if (cat == "kernel" || cat == "Kernel") {
      on_kernel();
    } else if (cat == "cpu_op" || cat == "Operator" || cat == "operator") {
      timeline_op();
      if (!ev_.has_ext || ev_.ext == 0 || never_launches(ev_.name)) return;
      const int32_t proc = process_of(ev_.pid);
      const int64_t key = ext_key(proc, ev_.ext);
      if (key == 0) return;  // an External id no kernel can be joined to
      ops_.add(key, tid_key(proc, ev_.tid), ev_.ts, ev_.dur, ev_.name, ev_.dims, ev_.n_dims, ev_.types, ev_.n_types,
               pack_concrete(ev_.concrete, ev_.n_concrete, kMaxInputs));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") {
      if (!ev_.has_corr) return;
      Launch l{ev_.has_ext ? ev_.ext : 0, ev_.tid, ev_.ts, process_of(ev_.pid), false};
      const Launch& kept = remember_launch(ev_.corr, l);
      if (!awaiting_.empty()) release_awaiting(ev_.corr, &kept);
      // A CUDA graph launch starts many kernels under one correlation id.
      auto [first, last] = pending_.equal_range(ev_.corr);
      if (first != last) {
        std::vector<Kern> ready;
        for (auto it = first; it != last; ++it) ready.push_back(std::move(it->second));
        pending_.erase(first, last);
        std::sort(ready.begin(), ready.end(), [](const Kern& a, const Kern& b) { return a.seq < b.seq; });
        const Launch launch = kept;  // a copy: resolving may evict launches
        for (Kern& k : ready) resolve_with_launch(std::move(k), launch);
      }
    }
  }

  // Every framework op goes to the timeline as it is read (the sink writes it; nothing is kept
  // here but each thread's stack of open ops, for the depth). Kineto writes a thread's ops in start
  // order, the outer op first; an op out of that order closes what it does not fall inside.
  void timeline_op() {
    if (!ev_.has_ts || !ev_.has_dur || !std::isfinite(ev_.ts) || !std::isfinite(ev_.dur) || ev_.dur < 0) return;
    const double end = ev_.ts + ev_.dur;
    const ThreadKey key{ev_.pid, ev_.tid};
    std::vector<std::pair<double, double>>* stack = last_stack_ && key == last_key_ ? last_stack_ : nullptr;
    if (!stack) {
      if (auto it = op_stacks_.find(key); it != op_stacks_.end()) {
        stack = &it->second;
      } else if (op_stacks_.size() < kMaxOpThreads) {
        stack = &op_stacks_[key];
      }
      last_key_ = key;
      last_stack_ = stack;  // elements of an unordered_map stay where they are
    }
    int depth = 0;
    if (stack) {
      while (!stack->empty() && (stack->back().second <= ev_.ts || stack->back().first > ev_.ts)) stack->pop_back();
      depth = static_cast<int>(stack->size());
      if (stack->size() < kMaxOpDepth) stack->emplace_back(ev_.ts, end);
    }
    ImportedOp o;
    o.pid = ev_.pid;
    o.tid = ev_.tid;
    o.start_us = ev_.ts;
    o.dur_us = ev_.dur;
    o.name = ev_.name;
    o.depth = depth;
    sink_.op(std::move(o));
  }

  // The dense index of a CPU process, assigned in the order processes appear.
  int32_t process_of(int64_t pid) {
    if (pid == last_pid_ && last_proc_ >= 0) return last_proc_;
    auto it = procs_.find(pid);
    int32_t proc;
    if (it != procs_.end()) {
      proc = it->second;
    } else if (procs_.size() < kMaxProcs) {
      proc = static_cast<int32_t>(procs_.size());
      procs_.emplace(pid, proc);
    } else {
      return kNoProc;
    }
    last_pid_ = pid;
    last_proc_ = proc;
    return proc;
  }
  int32_t known_process(int64_t pid) const {
    auto it = procs_.find(pid);
    return it == procs_.end() ? kNoProc : it->second;
  }

  // Returns the launch kept for `corr`: marked ambiguous when another process used the same id.
  const Launch& remember_launch(int64_t corr, const Launch& l) {
    auto it = launches_.find(corr);
    if (it != launches_.end()) {
      if (it->second.proc != l.proc) it->second.ambiguous = true;  // else: the first launch stays
      return it->second;
    }
    if (launches_.size() >= kMaxRuntime) {
      launches_.erase(launch_order_.front());
      launch_order_.pop_front();
    }
    launch_order_.push_back(corr);
    return launches_.emplace(corr, l).first->second;
  }

  // The process that launched kernel `k` when its launch record does not say: its own pid if that
  // is a CPU process (mergers that give GPU rows the process's pid), the only CPU process of the
  // trace, or the process the other kernels of its device were launched by. kNoProc when unsure:
  // then the kernel gets no op rather than another process's.
  int32_t process_without_launch(const Kern& k) const {
    if (int32_t p = known_process(k.pid); p >= 0) return p;
    if (procs_.size() <= 1) return 0;
    auto it = device_proc_.find(k.device >= 0 ? k.device : k.pid);
    return it != device_proc_.end() && it->second >= 0 ? it->second : kNoProc;
  }
  void learn_device(const Kern& k, int32_t proc) {
    const int64_t device = k.device >= 0 ? k.device : k.pid;
    auto [it, added] = device_proc_.emplace(device, proc);
    if (!added && it->second != proc) it->second = kConflict;
  }

  void on_kernel() {
    if (!ev_.has_ts || !ev_.has_dur) fail_event("a kernel event (cat \"kernel\") needs numeric ts and dur");
    if (ev_.dur < 0) fail_event("a kernel event with a negative duration");
    if (ev_.dur > kMaxKernelLatencyUs) fail_event("a kernel event longer than 1e12 us (11.6 days)");
    Kern k;
    k.seq = kernels_seen_++;
    k.name = ev_.name;
    k.ts = ev_.ts;
    k.dur = ev_.dur;
    k.ext = ev_.has_ext ? ev_.ext : 0;
    k.corr = ev_.corr;
    k.has_corr = ev_.has_corr;
    k.device = ev_.device;
    k.pid = ev_.pid;
    if (ev_.has_stream) k.stream = ev_.stream;
    if (ev_.has_grid || ev_.has_block || ev_.regs >= 0 || ev_.smem >= 0) {
      LaunchArgs a;
      if (ev_.has_grid) a.grid = ev_.grid;
      if (ev_.has_block) a.block = ev_.block;
      a.registers_per_thread = static_cast<int>(std::max<int64_t>(ev_.regs, 0));
      a.shared_memory_bytes = std::max<int64_t>(ev_.smem, 0);
      k.launch = a;
    }
    if (device_kernels_.size() < 1024 || device_kernels_.count(k.device)) ++device_kernels_[k.device];

    // While one CPU process is known (every single-process trace; Kineto writes a process's CPU
    // events before its GPU events), or when the kernel's pid is a CPU process, the kernel's own
    // External id names its op. Otherwise its launch record must say which process it belongs to.
    const int32_t own = known_process(k.pid);
    if (procs_.size() <= 1 || own >= 0) {
      if (ops_.find(ext_key(own >= 0 ? own : 0, k.ext), op_)) {
        emit(std::move(k), &op_);
        return;
      }
    }
    if (k.has_corr) {
      if (auto it = launches_.find(k.corr); it != launches_.end()) {
        const Launch l = it->second;
        resolve_with_launch(std::move(k), l);
        return;
      }
      if (pending_.size() >= kMaxPending) {
        // The launch records are far away in the file: park the oldest waiting kernels.
        while (!pending_order_.empty()) {
          int64_t oldest = pending_order_.front();
          pending_order_.pop_front();
          auto [first, last] = pending_.equal_range(oldest);
          if (first == last) continue;
          for (auto it = first; it != last; ++it) defer(it->second, nullptr);
          pending_.erase(first, last);
          break;
        }
      }
      if (pending_order_.size() > 4 * kMaxPending) {
        std::deque<int64_t> live;
        for (int64_t c : pending_order_)
          if (pending_.count(c)) live.push_back(c);
        pending_order_.swap(live);
      }
      int64_t corr = k.corr;
      if (!pending_.count(corr)) pending_order_.push_back(corr);
      pending_.emplace(corr, std::move(k));
      return;
    }
    defer(k, nullptr);
  }

  void resolve_with_launch(Kern&& k, const Launch& l) {
    if (l.ambiguous) {  // the correlation id names launches of several processes
      defer(k, nullptr);
      return;
    }
    learn_device(k, l.proc);
    if (ops_.find(ext_key(l.proc, l.ext), op_) || ops_.find(ext_key(l.proc, k.ext), op_)) {
      emit(std::move(k), &op_);
      return;
    }
    defer(k, &l);
  }

  // A kernel whose op is not known yet: to the temporary database, resolved at the end.
  void defer(const Kern& k, const Launch* l) {
    if (!scratch_) {
      scratch_ = std::make_unique<ScratchDb>(label_);
      scratch_->exec("CREATE TABLE deferred (seq INTEGER PRIMARY KEY, rec BLOB)");
      scratch_->exec("BEGIN");
      defer_insert_ = Stmt(scratch_->prepare("INSERT OR REPLACE INTO deferred VALUES (?1, ?2)"));
    }
    rec_.clear();
    varint::put(rec_, k.name.size());
    rec_.append(k.name);
    rec_.append(reinterpret_cast<const char*>(&k.ts), 8);
    rec_.append(reinterpret_cast<const char*>(&k.dur), 8);
    varint::put(rec_, varint::zigzag(k.ext));
    varint::put(rec_, varint::zigzag(k.corr));
    varint::put(rec_, k.has_corr);
    varint::put(rec_, varint::zigzag(k.device));
    varint::put(rec_, varint::zigzag(k.pid));
    varint::put(rec_, k.stream.has_value());
    if (k.stream) varint::put(rec_, varint::zigzag(*k.stream));
    varint::put(rec_, k.launch.has_value());
    if (k.launch) {
      for (int64_t v : k.launch->grid) varint::put(rec_, varint::zigzag(v));
      for (int64_t v : k.launch->block) varint::put(rec_, varint::zigzag(v));
      varint::put(rec_, varint::zigzag(k.launch->registers_per_thread));
      varint::put(rec_, varint::zigzag(k.launch->shared_memory_bytes));
    }
    varint::put(rec_, l != nullptr);
    if (l) {
      varint::put(rec_, varint::zigzag(l->ext));
      varint::put(rec_, varint::zigzag(l->tid));
      varint::put(rec_, varint::zigzag(l->proc));
      rec_.append(reinterpret_cast<const char*>(&l->ts), 8);
    }
    sqlite3_bind_int64(defer_insert_, 1, k.seq);
    sqlite3_bind_blob(defer_insert_, 2, rec_.data(), static_cast<int>(rec_.size()), SQLITE_STATIC);
    if (sqlite3_step(defer_insert_) != SQLITE_DONE) scratch_->fail("parking a kernel");
    sqlite3_reset(defer_insert_);
    ++deferred_;
  }

  static Kern decode_deferred(int64_t seq, const unsigned char* p, Launch& launch, bool& has_launch) {
    Kern k;
    k.seq = seq;
    std::size_t n = varint::get(p);
    k.name.assign(reinterpret_cast<const char*>(p), n);
    p += n;
    std::memcpy(&k.ts, p, 8);
    std::memcpy(&k.dur, p + 8, 8);
    p += 16;
    k.ext = varint::unzigzag(varint::get(p));
    k.corr = varint::unzigzag(varint::get(p));
    k.has_corr = varint::get(p) != 0;
    k.device = varint::unzigzag(varint::get(p));
    k.pid = varint::unzigzag(varint::get(p));
    if (varint::get(p)) k.stream = varint::unzigzag(varint::get(p));
    if (varint::get(p)) {
      LaunchArgs a;
      for (auto& v : a.grid) v = varint::unzigzag(varint::get(p));
      for (auto& v : a.block) v = varint::unzigzag(varint::get(p));
      a.registers_per_thread = static_cast<int>(varint::unzigzag(varint::get(p)));
      a.shared_memory_bytes = varint::unzigzag(varint::get(p));
      k.launch = a;
    }
    has_launch = varint::get(p) != 0;
    launch = Launch{};
    if (has_launch) {
      launch.ext = varint::unzigzag(varint::get(p));
      launch.tid = varint::unzigzag(varint::get(p));
      launch.proc = static_cast<int32_t>(varint::unzigzag(varint::get(p)));
      std::memcpy(&launch.ts, p, 8);
    }
    return k;
  }

  void emit(Kern&& k, const OpInfo* op) {
    ClassifyInput in;
    in.kernel_name = std::move(k.name);
    in.launch = k.launch;
    if (op) {
      in.framework_op = op->name;
      in.input_dims = op->dims;
      in.input_types = op->types;
      in.concrete_inputs = op->concrete;
    }
    ImportedKernel ik = classified_kernel(in);
    ik.seq = k.seq;
    ik.start_us = k.ts;
    ik.stream = k.stream;
    ImportedMeasurement m;
    m.latency_us = k.dur;
    m.method = "torch.profiler";
    ik.measurement = std::move(m);
    if (!op) ++without_op_;
    ++kernels_emitted_;
    // The launch call (cuda_runtime / cuda_driver event) of the kernel's correlation id gives its
    // launch time. Kineto writes it just after the kernel: a kernel whose call has not come yet
    // waits for it, among at most kMaxAwaiting kernels (then the oldest go without).
    if (k.has_corr) {
      if (auto it = launches_.find(k.corr); it != launches_.end()) {
        if (!it->second.ambiguous) ik.launch_us = it->second.ts;
      } else {
        awaiting_order_.push_back(k.corr);
        awaiting_[k.corr].push_back(std::move(ik));
        if (++awaiting_count_ > kMaxAwaiting) release_oldest_awaiting();
        if (awaiting_order_.size() > 4 * kMaxAwaiting) {  // drop the ids already released
          std::deque<int64_t> live;
          for (int64_t c : awaiting_order_)
            if (awaiting_.count(c)) live.push_back(c);
          awaiting_order_.swap(live);
        }
        return;
      }
    }
    sink_.kernel(std::move(ik));
  }

  // Hands over the kernels waiting for launch record `corr`, with its time when it names one launch.
  void release_awaiting(int64_t corr, const Launch* l) {
    auto it = awaiting_.find(corr);
    if (it == awaiting_.end()) return;
    for (ImportedKernel& ik : it->second) {
      if (l && !l->ambiguous) ik.launch_us = l->ts;
      sink_.kernel(std::move(ik));
      --awaiting_count_;
    }
    awaiting_.erase(it);
  }
  void release_oldest_awaiting() {
    while (!awaiting_order_.empty() && awaiting_count_ > kMaxAwaiting / 2) {
      const int64_t corr = awaiting_order_.front();
      awaiting_order_.pop_front();
      release_awaiting(corr, nullptr);
    }
  }
  void release_all_awaiting() {
    for (int64_t corr : awaiting_order_) {
      auto it = launches_.find(corr);
      release_awaiting(corr, it != launches_.end() ? &it->second : nullptr);
    }
    awaiting_order_.clear();
  }

  void finish() {
    if (kernels_seen_ == 0)
      throw ImportError(label_, "",
                        "no GPU kernel events (cat \"kernel\") among " + std::to_string(event_index_) +
                            " events: profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");
    // Kernels whose launch record never came.
    for (int64_t corr : pending_order_) {
      auto [first, last] = pending_.equal_range(corr);
      for (auto it = first; it != last; ++it) defer(it->second, nullptr);
      pending_.erase(first, last);
    }
    pending_.clear();
    if (scratch_) {
      scratch_->exec("COMMIT");
      tick("resolving launches");
      Stmt all(scratch_->prepare("SELECT seq, rec FROM deferred ORDER BY seq"));
      Launch launch;
      bool has_launch = false;
      std::size_t n = 0;
      while (sqlite3_step(all) == SQLITE_ROW) {
        Kern k = decode_deferred(sqlite3_column_int64(all, 0),
                                 static_cast<const unsigned char*>(sqlite3_column_blob(all, 1)), launch, has_launch);
        if (!has_launch && k.has_corr) {
          if (auto it = launches_.find(k.corr); it != launches_.end() && !it->second.ambiguous)
            launch = it->second, has_launch = true;
        }
        const int32_t proc = has_launch ? launch.proc : process_without_launch(k);
        bool found = proc >= 0 && (ops_.find(ext_key(proc, k.ext), op_) ||
                                   (has_launch && ops_.find(ext_key(proc, launch.ext), op_)) ||
                                   (has_launch && ops_.find_enclosing(tid_key(proc, launch.tid), launch.ts, op_)));
        emit(std::move(k), found ? &op_ : nullptr);
        if ((++n & 1023) == 0) tick("resolving launches");
      }
    }
    release_all_awaiting();
    // The GPU: the device most kernels ran on.
    int64_t device = -1;
    uint64_t best = 0;
    for (const auto& [d, n] : device_kernels_)
      if (n > best) best = n, device = d;
    auto it = devices_.find(device);
    if (it == devices_.end() && devices_.size() == 1) it = devices_.begin();
    if (it != devices_.end() && !it->second.empty()) {
      std::string id = control_.gpus ? public_dataset_gpu_id(it->second, *control_.gpus) : std::string();
      sink_.gpu(id, it->second);
      if (id.empty())
        sink_.warning("GPU " + quote_excerpt(it->second) +
                      " is not in the GPU database (perfloom gpus); add it with --gpus-dir");
    } else {
      sink_.warning("the trace has no deviceProperties for device " + std::to_string(device) + ": GPU unknown");
    }
    if (without_op_ > 0)
      sink_.warning(std::to_string(without_op_) + " of " + std::to_string(kernels_emitted_) +
                    " kernels have no framework op (CPU activity not profiled, or launched outside an op)");
  }

  JsonReader& r_;
  ImportSink& sink_;
  const ImportControl& control_;
  std::string label_;
  std::function<uint64_t()> raw_offset_;
  uint64_t raw_total_ = 0;
  uint64_t last_progress_ = 0;

  struct ThreadKey {
    int64_t pid, tid;
    bool operator==(const ThreadKey& o) const { return pid == o.pid && tid == o.tid; }
  };
  struct ThreadKeyHash {
    std::size_t operator()(const ThreadKey& k) const {
      return std::hash<int64_t>()(k.tid) ^ (std::hash<int64_t>()(k.pid) * 0x9E3779B97F4A7C15ull);
    }
  };
  static constexpr std::size_t kMaxOpThreads = 1 << 16;  // threads whose op depth is tracked
  static constexpr std::size_t kMaxOpDepth = 256;        // open ops kept per thread
  std::unordered_map<ThreadKey, std::vector<std::pair<double, double>>, ThreadKeyHash> op_stacks_;
  ThreadKey last_key_{0, 0};
  std::vector<std::pair<double, double>>* last_stack_ = nullptr;

  Event ev_;
  std::string text_;
  OpTable ops_;
  OpInfo op_;
  std::map<int64_t, std::string> devices_;
  std::unordered_map<int64_t, uint64_t> device_kernels_;
  std::unordered_map<int64_t, Launch> launches_;
  std::deque<int64_t> launch_order_;
  std::unordered_multimap<int64_t, Kern> pending_;
  std::unordered_map<int64_t, int32_t> procs_;  // CPU pid -> dense process index
  int64_t last_pid_ = 0;
  int32_t last_proc_ = kNoProc;
  std::unordered_map<int64_t, int32_t> device_proc_;  // device -> launching process, or kConflict
  std::deque<int64_t> pending_order_;
  // Kernels ready for the sink but for their launch time (emit).
  static constexpr std::size_t kMaxAwaiting = 4096;
  std::unordered_map<int64_t, std::vector<ImportedKernel>> awaiting_;
  std::deque<int64_t> awaiting_order_;
  std::size_t awaiting_count_ = 0;

  std::unique_ptr<ScratchDb> scratch_;
  Stmt defer_insert_;
  std::string rec_;
  uint64_t deferred_ = 0;

  bool saw_events_ = false;
  uint64_t event_index_ = 0;
  int64_t kernels_seen_ = 0;
  uint64_t kernels_emitted_ = 0;
  uint64_t without_op_ = 0;
};

std::string_view skip_bom_ws(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  while (!s.empty() && (s[0] == ' ' || s[0] == '\n' || s[0] == '\r' || s[0] == '\t')) s.remove_prefix(1);
  return s;
}

}  // namespace

int TorchTraceImporter::sniff(const SniffInput& in) const {
  if (in.is_directory) return 0;
  std::string_view s = skip_bom_ws(in.head);
  if (s.empty()) return 0;
  if (s[0] == '{') {
    if (s.find("\"traceEvents\"") != std::string_view::npos) return 95;
    if (s.find("\"schemaVersion\"") != std::string_view::npos &&
        s.find("\"deviceProperties\"") != std::string_view::npos)
      return 80;
    return 0;
  }
  if (s[0] == '[') {
    s.remove_prefix(1);
    s = skip_bom_ws(s);
    if (!s.empty() && s[0] == '{' && s.find("\"ph\"") != std::string_view::npos &&
        s.find("\"ts\"") != std::string_view::npos)
      return 60;
  }
  return 0;
}

void TorchTraceImporter::import_json(JsonReader& reader, ImportSink& sink, const ImportControl& control,
                                     const std::function<uint64_t()>& raw_offset, uint64_t raw_total) {
  TraceParser parser(reader, sink, control, raw_offset, raw_total);
  parser.run();
}

void TorchTraceImporter::import(const std::filesystem::path& path, ImportSink& sink,
                                const ImportControl& control) const {
  InputFile file(path);
  if (file.file_size() == 0) throw ImportError(path.string(), "", "empty file");
  JsonReader reader([&file](char* buf, std::size_t cap) { return file.read(buf, cap); }, path.string());
  import_json(
      reader, sink, control, [&file] { return file.raw_offset(); }, file.file_size());
}

}  // namespace perfloom::storage
